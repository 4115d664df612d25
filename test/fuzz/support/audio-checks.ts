// What a successful speech reply must hold, by format: the container's magic bytes, a WAV header that agrees with
// the reply's rate and length, PCM of exactly the length the frame count gives, and for server-sent events a run of
// deltas closed by one done event. Each check returns the problems it found (empty: the audio is valid).
import { CONTENT_TYPES } from '../../../src/audio/formats.ts';
import type { SpeechFormat } from '../../../src/server/schemas.ts';
import { expectedSamples } from '../../server/support.ts';
import type { HttpReply } from './http-client.ts';

export type ReplyMode = 'whole' | 'audio' | 'sse';

/** What a speech request asked for, as its reply must show it. */
export interface AudioExpectation {
  readonly format: SpeechFormat;
  readonly mode: ReplyMode;
  readonly sampleRate: number;
  /** The PCM length follows from the frame count only when time is not stretched. */
  readonly exactLength: boolean;
}

const STREAMING_SIZE = 0xffffffff;

function magicProblems(format: SpeechFormat, bytes: Buffer): string[] {
  const ascii = (start: number, end: number) => bytes.toString('latin1', start, end);
  switch (format) {
    case 'mp3': {
      const frameSync = bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0;
      return ascii(0, 3) === 'ID3' || frameSync ? [] : ['mp3 starts with neither ID3 nor a frame sync'];
    }
    case 'opus':
      return ascii(0, 4) === 'OggS' && ascii(28, 36) === 'OpusHead' ? [] : ['opus is not an Ogg stream with OpusHead'];
    case 'flac':
      return ascii(0, 4) === 'fLaC' ? [] : ['flac does not start with fLaC'];
    case 'aac':
      return bytes[0] === 0xff && (bytes[1]! & 0xf6) === 0xf0 ? [] : ['aac does not start with an ADTS header'];
    default:
      return [];
  }
}

function wavProblems(bytes: Buffer, expectation: AudioExpectation, whole: boolean): string[] {
  if (bytes.length < 44) return [`wav of ${bytes.length} bytes has no header`];
  const problems: string[] = [];
  const ascii = (start: number, end: number) => bytes.toString('latin1', start, end);
  if (ascii(0, 4) !== 'RIFF' || ascii(8, 16) !== 'WAVEfmt ' || ascii(36, 40) !== 'data') problems.push('not RIFF/WAVE');
  if (bytes.readUInt16LE(20) !== 1 || bytes.readUInt16LE(22) !== 1 || bytes.readUInt16LE(34) !== 16)
    problems.push('wav is not 16-bit mono PCM');
  if (bytes.readUInt32LE(24) !== expectation.sampleRate)
    problems.push(`wav header rate ${bytes.readUInt32LE(24)}, asked ${expectation.sampleRate}`);
  const [riff, data] = whole ? [bytes.length - 8, bytes.length - 44] : [STREAMING_SIZE, STREAMING_SIZE];
  if (bytes.readUInt32LE(4) !== riff || bytes.readUInt32LE(40) !== data)
    problems.push(`wav sizes ${bytes.readUInt32LE(4)}/${bytes.readUInt32LE(40)}, expected ${riff}/${data}`);
  return problems;
}

/** Problems of the audio bytes themselves (whole or as streamed), given the frame count the reply reported. */
export function audioBytesProblems(
  bytes: Buffer,
  expectation: AudioExpectation,
  frames: number | undefined,
  whole: boolean,
): string[] {
  if (bytes.length === 0) return ['no audio bytes'];
  const problems = magicProblems(expectation.format, bytes);
  if (expectation.format === 'wav') problems.push(...wavProblems(bytes, expectation, whole));
  if (expectation.format === 'wav' || expectation.format === 'pcm') {
    const pcmBytes = bytes.length - (expectation.format === 'wav' ? 44 : 0);
    if (pcmBytes % 2 !== 0) problems.push(`odd PCM length ${pcmBytes}`);
    if (expectation.exactLength && frames !== undefined) {
      const expected = 2 * expectedSamples(frames, expectation.sampleRate);
      if (pcmBytes !== expected) problems.push(`${pcmBytes} PCM bytes for ${frames} frames, expected ${expected}`);
    }
  }
  return problems;
}

const FINISH_REASONS = ['stop', 'length'];

function frameCount(value: string | string[] | undefined): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
}

function sseProblems(reply: HttpReply, expectation: AudioExpectation): string[] {
  const events = reply.body
    .toString('utf8')
    .split('\n\n')
    .filter((block) => block !== '')
    .map((block) => (block.startsWith('data: ') ? JSON.parse(block.slice('data: '.length)) : { type: block }));
  const done = events.at(-1);
  if (done?.type !== 'speech.audio.done') return [`the last event is ${JSON.stringify(done)?.slice(0, 200)}`];
  const deltas = events.slice(0, -1);
  if (deltas.some((event) => event.type !== 'speech.audio.delta' || typeof event.audio !== 'string'))
    return ['an event before done is not an audio delta'];
  const usage = done.usage as Record<string, unknown> | undefined;
  if (!FINISH_REASONS.includes(done.finish_reason) || typeof usage?.output_tokens !== 'number')
    return [`done event without finish reason or usage: ${JSON.stringify(done)}`];
  if (usage.total_tokens !== Number(usage.input_tokens) + usage.output_tokens) return ['usage does not add up'];
  const bytes = Buffer.concat(deltas.map((event) => Buffer.from(event.audio as string, 'base64')));
  return audioBytesProblems(bytes, expectation, usage.output_tokens, false);
}

/** Problems of a 200 speech reply. */
export function speechReplyProblems(reply: HttpReply, expectation: AudioExpectation): string[] {
  if (reply.status !== 200) return [`status ${reply.status}, expected 200`];
  if (!reply.complete) return ['the reply ended without its terminating chunk'];
  const contentType = expectation.mode === 'sse' ? 'text/event-stream' : CONTENT_TYPES[expectation.format];
  if (reply.headers['content-type'] !== contentType)
    return [`content type ${reply.headers['content-type']}, expected ${contentType}`];
  if (reply.headers['x-sample-rate'] !== String(expectation.sampleRate))
    return [`X-Sample-Rate ${reply.headers['x-sample-rate']}, expected ${expectation.sampleRate}`];
  if (expectation.mode === 'sse') return sseProblems(reply, expectation);
  const finish = expectation.mode === 'audio' ? reply.trailers : reply.headers;
  const frames = frameCount(finish['x-output-frames']);
  const reason = finish['x-finish-reason'];
  if (frames === undefined || !FINISH_REASONS.includes(String(reason)))
    return [`no finish reason or frame count (${String(reason)}, ${String(finish['x-output-frames'])})`];
  return audioBytesProblems(reply.body, expectation, frames, expectation.mode === 'whole');
}
