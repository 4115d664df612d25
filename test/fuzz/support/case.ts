// One table case: a request (ordinary HTTP, or raw bytes on a socket) to the open or the keyed app, and the reply it
// must get. Helpers keep each table line short.
import type { HttpRequest } from './http-client.ts';
import type { Expected, ExpectedError } from './reply-checks.ts';
import { jsonRequest, SPEECH_PATH, speechExpectation, TTS_PATH, ttsExpectation } from './requests.ts';

export interface HttpCase {
  readonly name: string;
  /** Which app: the open one (default) or the one that wants an API key. */
  readonly target?: 'open' | 'keyed';
  readonly request: HttpRequest | { readonly raw: string | Buffer };
  readonly expect: Expected;
}

export function refused(status: number, code: string, param?: string | null): { error: ExpectedError } {
  return { error: param === undefined ? { status, code } : { status, code, param } };
}

/** A small valid speech body; cases change one thing in it. */
export const SPEECH = { input: 'hello from the fuzz table', response_format: 'pcm', max_frames: 3, seed: 7 } as const;
export const TTS = { text: 'hello from the fuzz table', format: 'pcm', max_new_tokens: 3, seed: 7 } as const;

export function speaks(name: string, body: Record<string, unknown>, target?: 'keyed'): HttpCase {
  return { name, target, request: jsonRequest(SPEECH_PATH, body), expect: { audio: speechExpectation(body) } };
}

export function speechRefused(
  name: string,
  body: unknown,
  status: number,
  code: string,
  param?: string | null,
): HttpCase {
  return { name, request: jsonRequest(SPEECH_PATH, body), expect: refused(status, code, param) };
}

export function ttsSpeaks(name: string, body: Record<string, unknown>): HttpCase {
  return { name, request: jsonRequest(TTS_PATH, body), expect: { audio: ttsExpectation(body) } };
}

export function ttsRefused(name: string, body: unknown, status: number, code: string, param?: string | null): HttpCase {
  return { name, request: jsonRequest(TTS_PATH, body), expect: refused(status, code, param) };
}

export function rawBody(path: string, body: string | Buffer, contentType?: string): HttpRequest {
  return { method: 'POST', path, headers: contentType === undefined ? {} : { 'content-type': contentType }, body };
}
