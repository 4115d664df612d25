// One soak client request: a random route, format and reply mode, and a random way to end it: read to the end (the
// audio is checked), hang up before the handler can run (body half sent, or sent and dropped at once), hang up while
// the prompt runs (before any reply), hang up mid-stream (after a few chunks), or send a malformed body.
import http from 'node:http';
import { REQUEST_ID_HEADER } from '../../src/server/request-trace.ts';
import { type AudioExpectation, speechReplyProblems } from '../../test/fuzz/support/audio-checks.ts';
import type { HttpRequest } from '../../test/fuzz/support/http-client.ts';
import { parseEnvelope } from '../../test/fuzz/support/reply-checks.ts';
import {
  jsonRequest,
  msgpackRequest,
  SPEECH_PATH,
  speechExpectation,
  TTS_PATH,
  ttsExpectation,
} from '../../test/fuzz/support/requests.ts';
import { STALL_MS, type TraceBook } from './trace-book.ts';

export type Ending = 'read' | 'before-handler' | 'dropped-at-once' | 'mid-prompt' | 'mid-stream' | 'malformed';

export interface Outcome {
  /** A row of the table: 'completed', 'refused 503 ENGINE_OVERLOADED', 'hung up mid-stream', 'FAILED …'. */
  readonly label: string;
  readonly failed: boolean;
  /** The server asked the client to back off (503). */
  readonly overloaded: boolean;
  /** A failed request's story: what it asked, and its events at both ends. */
  readonly detail?: string;
}

export interface SoakRequest {
  readonly request: HttpRequest;
  readonly expectation: AudioExpectation;
  readonly ending: Ending;
  /** Route, format, reply mode and frame budget, for a failure's report. */
  readonly summary: string;
}

type Random = () => number;
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

const SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;
const TTS_FORMATS = ['wav', 'pcm', 'mp3', 'opus'] as const;
const ENDINGS: readonly [Ending, number][] = [
  ['read', 55],
  ['before-handler', 8],
  ['dropped-at-once', 7],
  ['mid-prompt', 10],
  ['mid-stream', 15],
  ['malformed', 5],
];

function ending(random: Random): Ending {
  let roll = random() * 100;
  for (const [name, weight] of ENDINGS) {
    roll -= weight;
    if (roll < 0) return name;
  }
  return 'read';
}

export function drawRequest(random: Random, voice: string | undefined): SoakRequest {
  const end = ending(random);
  const frames = random() < 0.2 ? undefined : 1 + Math.floor(random() * 24);
  const input = pick(random, ['Hello there.', 'A somewhat longer sentence for the soak to speak.', 'Ça va? 👋']);
  if (end === 'malformed') {
    const body = pick(random, ['{"input":', '{"input": 5}', '[]', '{"input":"x","nope":1}']);
    return {
      request: { method: 'POST', path: SPEECH_PATH, headers: { 'content-type': 'application/json' }, body },
      expectation: speechExpectation({}),
      ending: end,
      summary: `speech, malformed body ${body}`,
    };
  }
  const streamed = end === 'mid-stream' || random() < 0.5;
  if (random() < 0.7) {
    const body = {
      input,
      response_format: pick(random, SPEECH_FORMATS),
      seed: Math.floor(random() * 1000),
      ...(frames === undefined ? {} : { max_frames: frames }),
      ...(streamed ? { stream_format: pick(random, ['audio', 'sse']) } : {}),
      ...(voice !== undefined && random() < 0.2 ? { voice } : {}),
    };
    const expectation = speechExpectation(body);
    const summary = `speech json ${expectation.format} ${expectation.mode}, max_frames ${frames ?? 'unset'}, voice ${'voice' in body}`;
    return { request: jsonRequest(SPEECH_PATH, body), expectation, ending: end, summary };
  }
  const body = {
    text: input,
    format: pick(random, TTS_FORMATS),
    max_new_tokens: frames ?? 0,
    streaming: streamed,
    ...(voice !== undefined && random() < 0.2 ? { reference_id: voice } : {}),
  };
  const msgpack = random() < 0.5;
  const request = msgpack ? msgpackRequest(body) : jsonRequest(TTS_PATH, body);
  const expectation = ttsExpectation(body);
  const summary = `tts ${msgpack ? 'msgpack' : 'json'} ${expectation.format} ${expectation.mode}, max_new_tokens ${body.max_new_tokens}, voice ${'reference_id' in body}`;
  return { request, expectation, ending: end, summary };
}

/** A backstop beyond the stall clock: no request of the soak may take this long, however loaded the machine. */
const REPLY_TIMEOUT_MS = 300_000;

/** Sends one request (named `id` in its X-Request-Id) and ends it its way; never rejects. */
export function runRequest(
  base: string,
  agent: http.Agent,
  soak: SoakRequest,
  random: Random,
  id: string,
  book: TraceBook,
): Promise<Outcome> {
  const { hostname, port } = new URL(base);
  const { request, ending: end } = soak;
  const body = Buffer.from(request.body ?? '');
  const note = (event: string) => book.record(id, `client: ${event}`);
  return new Promise((resolve) => {
    let settled = false;
    const settle = (label: string, failed = false, overloaded = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const detail = failed ? `#${id} ${soak.summary}, ending ${end}: ${book.events(id).join('; ')}` : undefined;
      book.forget(id);
      resolve({ label, failed, overloaded, detail });
    };
    book.begin(id, () => {
      outgoing.destroy();
      settle(`FAILED: stalled (no progress in ${STALL_MS / 1000} s of a responsive event loop)`, true);
    });
    const outgoing = http.request(
      {
        hostname,
        port,
        path: request.path,
        method: request.method,
        agent,
        headers: { ...request.headers, 'content-length': String(body.length), [REQUEST_ID_HEADER]: id },
      },
      (response) => {
        note(`response ${response.statusCode}`);
        const chunks: Buffer[] = [];
        const stopAfter = 1 + Math.floor(random() * 4);
        response.on('data', (chunk: Buffer) => {
          if (chunks.length === 0) note('first bytes');
          else book.progress(id);
          chunks.push(chunk);
          if (end === 'mid-stream' && response.statusCode === 200 && chunks.length >= stopAfter) {
            outgoing.destroy();
            settle('hung up mid-stream');
          }
        });
        response.on('end', () => settle(...judge(response, Buffer.concat(chunks), soak, true)));
        response.on('aborted', () => settle(...judge(response, Buffer.concat(chunks), soak, false)));
        response.on('error', () => settle(...judge(response, Buffer.concat(chunks), soak, false)));
      },
    );
    const timer = setTimeout(() => {
      outgoing.destroy();
      settle(`FAILED: no reply in ${REPLY_TIMEOUT_MS / 1000} s`, true);
    }, REPLY_TIMEOUT_MS);
    outgoing.on('error', (error) => settle(`FAILED: ${error.message}`, true));
    outgoing.on('socket', () => note(outgoing.reusedSocket ? 'socket (kept alive)' : 'socket (new)'));
    outgoing.on('close', () => note('closed'));
    outgoing.on('finish', () => note('body sent'));
    if (end === 'before-handler') {
      outgoing.write(body.subarray(0, Math.floor(body.length / 2)));
      setImmediate(() => {
        outgoing.destroy();
        settle('hung up before the handler (half a body)');
      });
      return;
    }
    outgoing.end(body);
    if (end === 'dropped-at-once') {
      setImmediate(() => {
        outgoing.destroy();
        settle('hung up before the handler (body sent)');
      });
    } else if (end === 'mid-prompt') {
      setTimeout(
        () => {
          outgoing.destroy();
          settle('hung up before any reply');
        },
        Math.floor(random() * 15),
      );
    }
  });
}

type Judged = [label: string, failed: boolean, overloaded: boolean];

function judge(response: http.IncomingMessage, bytes: Buffer, soak: SoakRequest, complete: boolean): Judged {
  const status = response.statusCode ?? 0;
  if (status >= 400) {
    const envelope = parseEnvelope(bytes.toString('utf8'));
    if (Array.isArray(envelope)) return [`FAILED: ${status} without the envelope`, true, false];
    if (status === 503) return [`refused 503 ${envelope.code}`, false, true];
    if (soak.ending === 'malformed' && status === 400) return ['refused 400 (malformed, as sent)', false, false];
    return [`FAILED: ${status} ${envelope.code}`, true, false];
  }
  const reply = { status, headers: response.headers, trailers: response.trailers, body: bytes, complete };
  const problems = speechReplyProblems(reply, soak.expectation);
  if (problems.length > 0) return [`FAILED: ${problems[0]}`, true, false];
  return ['completed, audio valid', false, false];
}
