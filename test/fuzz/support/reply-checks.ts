// What every reply to client input must be: valid audio (or the route's JSON), or OpenAI's error envelope with an
// UPPER_SNAKE code and the status that code stands for; never a 5xx. Each check returns the problems it found.
import type { AudioExpectation } from './audio-checks.ts';
import { speechReplyProblems } from './audio-checks.ts';
import type { HttpReply, RawReply } from './http-client.ts';

export interface ExpectedError {
  readonly status: number;
  readonly code: string;
  /** Checked when given (null: the envelope's param is null). */
  readonly param?: string | null;
}

export type Expected =
  | { readonly error: ExpectedError }
  | { readonly audio: AudioExpectation }
  | { readonly ok: number; readonly check?: (body: Buffer, reply: HttpReply) => string[] };

const CODE = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/;
const ENVELOPE_KEYS = ['code', 'message', 'param', 'type'];

export interface Envelope {
  readonly message: string;
  readonly type: string;
  readonly param: string | null;
  readonly code: string;
}

/** The envelope in an error body, or the problems that keep it from being one. */
export function parseEnvelope(body: string): Envelope | string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [`the error body is not JSON: ${JSON.stringify(body.slice(0, 200))}`];
  }
  const outer = parsed as { error?: Record<string, unknown> };
  if (parsed === null || typeof parsed !== 'object' || Object.keys(parsed).join() !== 'error' || !outer.error)
    return [`the error body is not { error }: ${body.slice(0, 200)}`];
  const error = outer.error;
  const problems: string[] = [];
  if (Object.keys(error).sort().join() !== ENVELOPE_KEYS.join()) problems.push(`envelope keys ${Object.keys(error)}`);
  if (typeof error.message !== 'string' || error.message === '') problems.push('no message');
  if (typeof error.type !== 'string' || error.type === '') problems.push('no type');
  if (error.param !== null && typeof error.param !== 'string') problems.push('param neither string nor null');
  if (typeof error.code !== 'string' || !CODE.test(error.code)) problems.push(`code ${String(error.code)}`);
  return problems.length > 0 ? problems : (error as unknown as Envelope);
}

function errorProblems(status: number, body: string, expected: ExpectedError): string[] {
  const envelope = parseEnvelope(body);
  if (Array.isArray(envelope)) return [`status ${status}: ${envelope.join('; ')}`];
  const got = `${status} ${envelope.code} (param ${envelope.param}): ${envelope.message}`;
  if (status !== expected.status || envelope.code !== expected.code)
    return [`expected ${expected.status} ${expected.code}, got ${got}`];
  if (expected.param !== undefined && envelope.param !== expected.param)
    return [`expected param ${expected.param}, got ${got}`];
  return [];
}

export function replyProblems(reply: HttpReply, expected: Expected): string[] {
  if ('error' in expected) {
    const problems = errorProblems(reply.status, reply.body.toString('utf8'), expected.error);
    if (problems.length === 0 && reply.status === 503 && reply.headers['retry-after'] === undefined)
      problems.push('503 without Retry-After');
    if (problems.length === 0 && reply.status === 401 && reply.headers['www-authenticate'] === undefined)
      problems.push('401 without WWW-Authenticate');
    return problems;
  }
  if ('audio' in expected) {
    const problems = speechReplyProblems(reply, expected.audio);
    if (reply.status >= 400) problems.push(reply.body.toString('utf8').slice(0, 300));
    return problems;
  }
  if (reply.status !== expected.ok)
    return [`status ${reply.status}, expected ${expected.ok}: ${reply.body.slice(0, 300)}`];
  return expected.check?.(reply.body, reply) ?? [];
}

export function rawReplyProblems(reply: RawReply, expected: ExpectedError): string[] {
  if (reply.status === 0) return [`no HTTP status line in ${JSON.stringify(reply.head.slice(0, 100))}`];
  return errorProblems(reply.status, reply.body, expected);
}
