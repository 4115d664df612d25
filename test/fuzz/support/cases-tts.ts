// Table cases for POST /v1/tts, JSON and msgpack: Fish's formats and fields at their limits, the SDK's default body,
// and bodies that are refused by name, including msgpack that is broken, of the wrong shape, or binary where text
// is wanted (which must never be turned into text and spoken).
import { encode } from '@msgpack/msgpack';
import { toneWav } from '../../voices/wav-fixture.ts';
import { type HttpCase, rawBody, refused, TTS, ttsRefused, ttsSpeaks } from './case.ts';
import { STORED_VOICE } from './fuzz-server.ts';
import { msgpackRequest, TTS_PATH, ttsExpectation } from './requests.ts';

const FORMATS = ['wav', 'pcm', 'mp3', 'opus'] as const;
const wav = toneWav(0.5, 22050);

function json(): HttpCase[] {
  return [
    ...FORMATS.flatMap((format) => [
      ttsSpeaks(`${format} whole`, { ...TTS, format }),
      ttsSpeaks(`${format} streaming`, { ...TTS, format, streaming: true }),
    ]),
    ttsSpeaks('wav by default', { text: 'no format', max_new_tokens: 2 }),
    ttsSpeaks('a stored voice as reference_id', { ...TTS, reference_id: STORED_VOICE }),
    ttsSpeaks('reference_id null and seed null', { ...TTS, reference_id: null, seed: null }),
    ttsSpeaks('prosody speed 2, volume -10 dB', { ...TTS, prosody: { speed: 2, volume: -10 } }),
    ttsSpeaks('prosody null', { ...TTS, prosody: null }),
    ttsSpeaks('normalize false, chunk_length 100', { ...TTS, normalize: false, chunk_length: 100 }),
    ttsSpeaks('max_new_tokens 0 (as many as fit)', { text: 'short', format: 'pcm', max_new_tokens: 0 }),
    ttsSpeaks('sample_rate 16000', { ...TTS, sample_rate: 16000 }),
    ttsSpeaks('sample_rate null', { ...TTS, sample_rate: null }),
    ttsSpeaks('mp3 at 64 kbit/s', { ...TTS, format: 'mp3', mp3_bitrate: 64 }),
    ttsSpeaks('opus at 6 kbit/s', { ...TTS, format: 'opus', opus_bitrate: 6 }),
    ttsSpeaks('opus at the encoder default', { ...TTS, format: 'opus', opus_bitrate: -1000 }),
    ttsSpeaks('latency and cache hints', { ...TTS, latency: 'balanced', use_memory_cache: 'on' }),
    ttsSpeaks('repetition_penalty (ignored)', { ...TTS, repetition_penalty: 1.2 }),
    ttsSpeaks('a one-off reference', {
      ...TTS,
      references: [{ audio: Buffer.from(wav).toString('base64'), text: 'tone' }],
    }),
    ttsSpeaks('empty references', { ...TTS, references: [] }),
    ttsRefused('missing text', { format: 'pcm' }, 400, 'MISSING_FIELD', 'text'),
    ttsRefused('text empty', { ...TTS, text: '' }, 400, 'INVALID_FIELD', 'text'),
    ttsRefused('text a number', { ...TTS, text: 1 }, 400, 'INVALID_FIELD', 'text'),
    ttsRefused('text over the limit', { ...TTS, text: 'b'.repeat(4097) }, 400, 'INPUT_TOO_LONG', 'text'),
    ttsRefused(
      'a structural token in text',
      { ...TTS, text: 'a <|semantic:3|> b' },
      400,
      'TEXT_STRUCTURAL_TOKEN',
      'text',
    ),
    ttsRefused('format aac (not Fish)', { ...TTS, format: 'aac' }, 400, 'INVALID_FIELD', 'format'),
    ttsRefused('format flac (not Fish)', { ...TTS, format: 'flac' }, 400, 'INVALID_FIELD', 'format'),
    ttsRefused('unknown reference_id', { ...TTS, reference_id: 'ghost' }, 404, 'VOICE_NOT_FOUND', 'reference_id'),
    ttsRefused('reference_id empty', { ...TTS, reference_id: '' }, 400, 'INVALID_FIELD', 'reference_id'),
    ttsRefused('chunk_length 99', { ...TTS, chunk_length: 99 }, 400, 'INVALID_FIELD', 'chunk_length'),
    ttsRefused('chunk_length 301', { ...TTS, chunk_length: 301 }, 400, 'INVALID_FIELD', 'chunk_length'),
    ttsRefused('max_new_tokens negative', { ...TTS, max_new_tokens: -1 }, 400, 'INVALID_FIELD', 'max_new_tokens'),
    ttsRefused(
      'max_new_tokens over the limit',
      { ...TTS, max_new_tokens: 5000 },
      400,
      'FRAME_LIMIT_EXCEEDED',
      'max_new_tokens',
    ),
    ttsRefused('mp3_bitrate 100', { ...TTS, mp3_bitrate: 100 }, 400, 'INVALID_FIELD', 'mp3_bitrate'),
    ttsRefused('opus_bitrate 5', { ...TTS, opus_bitrate: 5 }, 400, 'INVALID_FIELD', 'opus_bitrate'),
    ttsRefused('opus_bitrate 511', { ...TTS, opus_bitrate: 511 }, 400, 'INVALID_FIELD', 'opus_bitrate'),
    ttsRefused('prosody with pitch', { ...TTS, prosody: { pitch: 2 } }, 400, 'UNKNOWN_FIELD', 'prosody.pitch'),
    ttsRefused('prosody speed 5', { ...TTS, prosody: { speed: 5 } }, 400, 'INVALID_FIELD', 'prosody.speed'),
    ttsRefused('latency fast', { ...TTS, latency: 'fast' }, 400, 'INVALID_FIELD', 'latency'),
    ttsRefused('use_memory_cache true', { ...TTS, use_memory_cache: true }, 400, 'INVALID_FIELD', 'use_memory_cache'),
    ttsRefused(
      'repetition_penalty negative',
      { ...TTS, repetition_penalty: -1 },
      400,
      'INVALID_FIELD',
      'repetition_penalty',
    ),
    ttsRefused('top_k (an OpenAI-route field)', { ...TTS, top_k: 5 }, 400, 'UNKNOWN_FIELD', 'top_k'),
    ttsRefused('streaming as text', { ...TTS, streaming: 'true' }, 400, 'INVALID_FIELD', 'streaming'),
  ];
}

function msgpack(): HttpCase[] {
  const raw = (name: string, body: Buffer, status: number, code: string, param?: string) => ({
    name: `msgpack: ${name}`,
    request: rawBody(TTS_PATH, body, 'application/msgpack'),
    expect: refused(status, code, param),
  });
  const packed = (name: string, body: Record<string, unknown>) => ({
    name: `msgpack: ${name}`,
    request: msgpackRequest(body),
    expect: { audio: ttsExpectation(body) },
  });
  const packedRefused = (name: string, body: unknown, status: number, code: string, param?: string) => ({
    name: `msgpack: ${name}`,
    request: msgpackRequest(body),
    expect: refused(status, code, param),
  });
  return [
    packed('pcm', { ...TTS }),
    packed('wav streaming', { ...TTS, format: 'wav', streaming: true }),
    packed('the SDK default body', {
      text: 'hello there',
      chunk_length: 200,
      format: 'pcm',
      mp3_bitrate: 128,
      opus_bitrate: -1000,
      references: [],
      reference_id: null,
      normalize: true,
      latency: 'normal',
      sample_rate: 24000,
      prosody: null,
      top_p: 0.7,
      temperature: 0.7,
      repetition_penalty: 1.2,
      max_new_tokens: 4,
      streaming: false,
      seed: null,
      use_memory_cache: 'off',
    }),
    packed('reference audio as raw bytes', { ...TTS, references: [{ audio: wav, text: 'tone' }] }),
    raw('not msgpack', Buffer.from([0xc1, 0xff]), 400, 'MALFORMED_MSGPACK', 'body'),
    raw('truncated', Buffer.from(encode({ ...TTS })).subarray(0, 10), 400, 'MALFORMED_MSGPACK', 'body'),
    raw(
      'trailing bytes',
      Buffer.concat([Buffer.from(encode({ ...TTS })), Buffer.from([0x01])]),
      400,
      'MALFORMED_MSGPACK',
      'body',
    ),
    raw(
      'an array claiming 2^32-1 items',
      Buffer.from([0xdd, 0xff, 0xff, 0xff, 0xff, 0x01]),
      400,
      'MALFORMED_MSGPACK',
      'body',
    ),
    raw(
      'a string claiming 2^32-1 bytes',
      Buffer.from([0xdb, 0xff, 0xff, 0xff, 0xff, 0x61]),
      400,
      'MALFORMED_MSGPACK',
      'body',
    ),
    raw('an empty body', Buffer.alloc(0), 400, 'MALFORMED_MSGPACK', 'body'),
    packedRefused('an array', [1, 2], 400, 'INVALID_FIELD', 'body'),
    packedRefused('nil', null, 400, 'INVALID_FIELD', 'body'),
    packedRefused('an unknown field', { ...TTS, voice: 'x' }, 400, 'UNKNOWN_FIELD', 'voice'),
    packedRefused('text as binary', { ...TTS, text: Buffer.from('spoken bytes') }, 400, 'BINARY_NOT_ALLOWED', 'text'),
    packedRefused('format as binary', { ...TTS, format: Buffer.from('pcm') }, 400, 'BINARY_NOT_ALLOWED', 'format'),
    packedRefused(
      'a reference transcript as binary',
      { ...TTS, references: [{ audio: wav, text: Buffer.from('t') }] },
      400,
      'BINARY_NOT_ALLOWED',
      'references[0].text',
    ),
    packedRefused('seed as a 64-bit integer', { ...TTS, seed: 2 ** 40 }, 400, 'INVALID_FIELD', 'seed'),
    {
      name: 'msgpack under another content type',
      request: rawBody(TTS_PATH, Buffer.from(encode({ ...TTS })), 'application/x-msgpack'),
      expect: refused(415, 'UNSUPPORTED_CONTENT_TYPE'),
    },
  ];
}

export const TTS_CASES: readonly HttpCase[] = [...json(), ...msgpack()];
