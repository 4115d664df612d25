// One soak client request: a random route, format and reply mode, and a random way to end it: read to the end (the
// audio is checked), hang up before the handler can run (body half sent, or sent and dropped at once), hang up while
// the prompt runs (before any reply), hang up mid-stream (after a few chunks), or send a malformed body.
import http from 'node:http';
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

export type Ending = 'read' | 'before-handler' | 'dropped-at-once' | 'mid-prompt' | 'mid-stream' | 'malformed';

export interface Outcome {
  /** A row of the table: 'completed', 'refused 503 ENGINE_OVERLOADED', 'hung up mid-stream', 'FAILED …'. */
  readonly label: string;
  readonly failed: boolean;
  /** The server asked the client to back off (503). */
  readonly overloaded: boolean;
}

export interface SoakRequest {
  readonly request: HttpRequest;
  readonly expectation: AudioExpectation;
  readonly ending: Ending;
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
    return { request: jsonRequest(SPEECH_PATH, body), expectation: speechExpectation(body), ending: end };
  }
  const body = {
    text: input,
    format: pick(random, TTS_FORMATS),
    max_new_tokens: frames ?? 0,
    streaming: streamed,
    ...(voice !== undefined && random() < 0.2 ? { reference_id: voice } : {}),
  };
  const request = random() < 0.5 ? jsonRequest(TTS_PATH, body) : msgpackRequest(body);
  return { request, expectation: ttsExpectation(body), ending: end };
}

const REPLY_TIMEOUT_MS = 30_000;

/** Sends one request and ends it its way; never rejects. */
export function runRequest(base: string, agent: http.Agent, soak: SoakRequest, random: Random): Promise<Outcome> {
  const { hostname, port } = new URL(base);
  const { request, ending: end } = soak;
  const body = Buffer.from(request.body ?? '');
  return new Promise((resolve) => {
    let settled = false;
    const settle = (label: string, failed = false, overloaded = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ label, failed, overloaded });
    };
    const outgoing = http.request(
      {
        hostname,
        port,
        path: request.path,
        method: request.method,
        agent,
        headers: { ...request.headers, 'content-length': String(body.length) },
      },
      (response) => {
        const chunks: Buffer[] = [];
        const stopAfter = 1 + Math.floor(random() * 4);
        response.on('data', (chunk: Buffer) => {
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
      settle('FAILED: no reply in 30 s', true);
    }, REPLY_TIMEOUT_MS);
    outgoing.on('error', (error) => settle(`FAILED: ${error.message}`, true));
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
