// How each reply ended, seen from its socket: every reply closes exactly once, so the request counter is kept here,
// and a client that hangs up at any moment (while its body is read, while its voice resolves, before or after the
// engine has the request) is noticed even when nobody was listening yet.
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

/** The status and code a reply ended with, when they are not its HTTP status and `ok`. */
export interface Outcome {
  readonly status?: number;
  readonly code: string;
}

interface ReplyWatch {
  outcome: Outcome | undefined;
  gone: boolean;
  readonly listeners: Set<() => void>;
}

/** Status of a reply the client closed before it was complete (nginx's convention). */
export const CLIENT_CLOSED_STATUS = 499;

const watches = new WeakMap<ServerResponse, ReplyWatch>();
/** Connections with a reply still open: a hang-up there is that reply's to count. */
const openReplies = new WeakMap<object, number>();

/** Whether a reply is open on this connection (its request arrived, its reply has not closed). */
export function replyOpenOn(socket: object): boolean {
  return (openReplies.get(socket) ?? 0) > 0;
}

/** Starts watching a reply as its request arrives; `onClosed` gets its final status and code once. */
export function watchReply(raw: ServerResponse, onClosed: (status: number, code: string) => void): void {
  const watch: ReplyWatch = { outcome: undefined, gone: false, listeners: new Set() };
  watches.set(raw, watch);
  const socket = raw.socket;
  if (socket !== null) openReplies.set(socket, (openReplies.get(socket) ?? 0) + 1);
  let finished = false;
  raw.once('finish', () => {
    finished = true;
  });
  raw.once('close', () => {
    if (socket !== null) openReplies.set(socket, (openReplies.get(socket) ?? 1) - 1);
    const { outcome } = watch;
    if (finished) {
      const status = outcome?.status ?? raw.statusCode;
      onClosed(status, outcome?.code ?? (status < 400 ? 'ok' : 'UNNAMED_ERROR'));
      return;
    }
    // Closed before the last byte: the server cut it (outcome named) or the client left; what it held is let go
    // before it is counted.
    if (outcome === undefined) {
      watch.gone = true;
      for (const listener of watch.listeners) listener();
      watch.listeners.clear();
    }
    onClosed(outcome?.status ?? CLIENT_CLOSED_STATUS, outcome?.code ?? 'CLIENT_CLOSED');
  });
}

/** Names how a reply ended, for the request counter (the first name given is kept). */
export function recordOutcome(reply: FastifyReply, outcome: Outcome): void {
  const watch = watches.get(reply.raw);
  if (watch !== undefined && watch.outcome === undefined) watch.outcome = outcome;
}

/** Whether the client has closed its connection before its reply was complete. */
export function clientGone(reply: FastifyReply): boolean {
  return watches.get(reply.raw)?.gone ?? reply.raw.destroyed;
}

/** Calls `listener` once the client hangs up (at once if it already has); returns a function that stops listening. */
export function onClientGone(reply: FastifyReply, listener: () => void): () => void {
  const watch = watches.get(reply.raw);
  if (watch === undefined || watch.gone) {
    if (watch !== undefined || reply.raw.destroyed) queueMicrotask(listener);
    return () => {};
  }
  watch.listeners.add(listener);
  return () => watch.listeners.delete(listener);
}
