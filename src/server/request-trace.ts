// Per-request lifecycle events for diagnosis (the soak reads them, so that a request that never got its reply says
// where it stopped): off unless the app is given a trace; a request is named by its X-Request-Id header.
import type { FastifyReply } from 'fastify';

/** Receives `event` (one short line: 'arrived', 'engine admitted', 'closed 499 CLIENT_CLOSED') for a request. */
export type RequestTrace = (requestId: string, event: string) => void;

/** The header a traced request's id comes in. */
export const REQUEST_ID_HEADER = 'x-request-id';

/** Records `event` for the reply's request when the app is traced. */
export function traceReply(trace: RequestTrace | undefined, reply: FastifyReply, event: string): void {
  trace?.(String(reply.request.id), event);
}
