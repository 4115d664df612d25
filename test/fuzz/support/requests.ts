// Request builders shared by the table and the property pass: JSON and msgpack bodies, multipart uploads written by
// hand (so that broken ones can be written too), and what audio a well-formed speech body asks for.
import { encode } from '@msgpack/msgpack';
import type { SpeechFormat } from '../../../src/server/schemas.ts';
import type { AudioExpectation } from './audio-checks.ts';
import type { HttpRequest } from './http-client.ts';

export const SPEECH_PATH = '/v1/audio/speech';
export const TTS_PATH = '/v1/tts';
export const VOICES_PATH = '/v1/audio/voices';

export function jsonRequest(path: string, body: unknown, headers: Record<string, string> = {}): HttpRequest {
  return {
    method: 'POST',
    path,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  };
}

export function msgpackRequest(body: unknown): HttpRequest {
  return {
    method: 'POST',
    path: TTS_PATH,
    headers: { 'content-type': 'application/msgpack' },
    body: Buffer.from(encode(body)),
  };
}

export interface Part {
  readonly name: string;
  readonly value: string | Uint8Array;
  /** A file part's name (a part with one is a file). */
  readonly filename?: string;
}

export const BOUNDARY = 'fuzzboundary7MA4YWxkTrZu0gW';

export function multipartBody(parts: readonly Part[], boundary = BOUNDARY): Buffer {
  const pieces: Buffer[] = [];
  for (const part of parts) {
    const file = part.filename === undefined ? '' : `; filename="${part.filename}"`;
    const type = part.filename === undefined ? '' : '\r\nContent-Type: application/octet-stream';
    pieces.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"${file}${type}\r\n\r\n`),
    );
    pieces.push(Buffer.from(part.value));
    pieces.push(Buffer.from('\r\n'));
  }
  pieces.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(pieces);
}

export function multipartRequest(parts: readonly Part[] | Buffer, boundary = BOUNDARY): HttpRequest {
  return {
    method: 'POST',
    path: VOICES_PATH,
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    body: Buffer.isBuffer(parts) ? parts : multipartBody(parts, boundary),
  };
}

type Body = Record<string, unknown>;

/** The audio a speech body asks for, as /v1/audio/speech replies it. */
export function speechExpectation(body: Body): AudioExpectation {
  const format = (body.response_format ?? 'mp3') as SpeechFormat;
  const mode =
    body.stream_format === 'sse' ? 'sse' : body.stream_format === 'audio' || body.stream === true ? 'audio' : 'whole';
  const sampleRate = (body.sample_rate as number | undefined) ?? (format === 'pcm' ? 24000 : 44100);
  return { format, mode, sampleRate, exactLength: body.speed === undefined || body.speed === 1 };
}

/** The audio a tts body asks for, as /v1/tts replies it. */
export function ttsExpectation(body: Body): AudioExpectation {
  const prosody = body.prosody as { speed?: number } | null | undefined;
  return {
    format: (body.format ?? 'wav') as SpeechFormat,
    mode: body.streaming === true ? 'audio' : 'whole',
    sampleRate: (body.sample_rate as number | null | undefined) ?? 44100,
    exactLength: prosody?.speed === undefined || prosody.speed === 1,
  };
}
