// fast-check arbitraries for the property pass: bodies for each route drawn field by field from valid values (mostly)
// and wild ones (any JSON, wrong types, binary in msgpack), with unknown fields, missing fields and broken encodings
// mixed in. A body drawn only from valid values is marked `valid`: the server must speak it.
import fc from 'fast-check';
import { toneWav } from '../../voices/wav-fixture.ts';
import { STORED_VOICE } from './fuzz-server.ts';
import type { Part } from './requests.ts';

export interface Drawn<T> {
  readonly body: T;
  /** Every field was drawn from its valid values. */
  readonly valid: boolean;
}

const STRUCTURAL = ['<|im_start|>', '<|im_end|>', '<|voice|>', '<|text|>', '<|interleave|>', '<|semantic:5|>'];

const wild: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.string({ maxLength: 12 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(''),
);

/** Text that speaks: printable, any script, never a structural token. */
const speakable = fc
  .oneof(
    fc.string({ minLength: 1, maxLength: 60 }),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }),
    fc.constantFrom('Hello there.', 'It costs $3.50 on 12/01/2026.', 'Ça va? 你好。 Привет!', '👋🏽 ok'),
  )
  .filter((text) => !STRUCTURAL.some((token) => text.includes(token)));

/** Text that may hold a structural token or run past the limits. */
const anyText = fc.oneof(
  { arbitrary: speakable, weight: 6 },
  {
    arbitrary: fc.tuple(speakable, fc.constantFrom(...STRUCTURAL)).map(([text, token]) => `${text}${token}`),
    weight: 1,
  },
  { arbitrary: fc.integer({ min: 4090, max: 4100 }).map((length) => 'x'.repeat(length)), weight: 1 },
);

const referenceAudio = fc.oneof(
  fc
    .double({ min: 0.05, max: 1.5, noNaN: true })
    .map((seconds) => Buffer.from(toneWav(seconds, 22050)).toString('base64')),
  fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes).toString('base64')),
  fc.string({ maxLength: 16 }),
  fc.constant('data:audio/wav;base64,UklGRg=='),
);
const references = fc.array(fc.record({ audio: referenceAudio, text: anyText }), { maxLength: 6 });

type FieldArbitraries = Record<string, { valid: fc.Arbitrary<unknown>; other: fc.Arbitrary<unknown> }>;

/** A body with each field absent, valid or wild (or drawn from `other`), plus at times an unknown field. */
function body(fields: FieldArbitraries, required: readonly string[]): fc.Arbitrary<Drawn<Record<string, unknown>>> {
  const entries = Object.entries(fields).map(([name, { valid, other }]) =>
    fc
      .oneof(
        { arbitrary: fc.constant({ kind: 'absent' as const }), weight: required.includes(name) ? 1 : 6 },
        { arbitrary: valid.map((value) => ({ kind: 'valid' as const, value })), weight: 8 },
        { arbitrary: fc.oneof(other, wild).map((value) => ({ kind: 'other' as const, value })), weight: 1 },
      )
      .map((drawn) => [name, drawn] as const),
  );
  const unknown = fc.option(fc.tuple(fc.string({ minLength: 1, maxLength: 10 }), wild), { freq: 12 });
  return fc.tuple(fc.tuple(...entries), unknown).map(([drawn, extra]) => {
    const result: Record<string, unknown> = {};
    let valid = extra === null;
    for (const [name, field] of drawn) {
      if (field.kind === 'absent') valid &&= !required.includes(name);
      else result[name] = field.value;
      if (field.kind === 'other') valid = false;
    }
    if (extra !== null && !(extra[0] in result)) result[extra[0]] = extra[1];
    else valid &&= extra === null;
    return { body: result, valid };
  });
}

const frames = fc.integer({ min: 1, max: 6 });
const rate = fc.oneof(fc.constantFrom(8000, 16000, 22050, 24000, 44100, 48000), fc.integer({ min: 8000, max: 48000 }));
const seed = fc.integer({ min: 0, max: 4294967295 });
const unit = fc.double({ min: 0.01, max: 1, noNaN: true });

export const speechBody = body(
  {
    input: { valid: speakable, other: anyText },
    model: { valid: fc.constantFrom('tts-1', 'drama3'), other: wild },
    voice: { valid: fc.constantFrom('alloy', 'default', STORED_VOICE, { id: STORED_VOICE }), other: fc.string() },
    instructions: { valid: speakable, other: anyText },
    response_format: { valid: fc.constantFrom('mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'), other: fc.string() },
    speed: { valid: fc.double({ min: 0.25, max: 4, noNaN: true }), other: fc.double() },
    stream_format: { valid: fc.constantFrom('audio', 'sse'), other: fc.string() },
    sample_rate: { valid: rate, other: fc.integer() },
    seed: { valid: seed, other: fc.integer() },
    temperature: { valid: fc.double({ min: 0.01, max: 2, noNaN: true }), other: fc.double() },
    top_p: { valid: unit, other: fc.double() },
    top_k: { valid: fc.integer({ min: 1, max: 4097 }), other: fc.integer() },
    max_frames: { valid: frames, other: fc.integer({ min: -10, max: 10000 }) },
    references: { valid: fc.constant([]), other: references },
    stream: { valid: fc.boolean(), other: wild },
  },
  ['input', 'max_frames'],
);

export const ttsBody = body(
  {
    text: { valid: speakable, other: anyText },
    format: { valid: fc.constantFrom('wav', 'pcm', 'mp3', 'opus'), other: fc.string() },
    streaming: { valid: fc.boolean(), other: wild },
    reference_id: { valid: fc.constantFrom(null, STORED_VOICE), other: fc.string() },
    references: { valid: fc.constant([]), other: references },
    seed: { valid: fc.option(seed), other: fc.integer() },
    temperature: { valid: fc.double({ min: 0.01, max: 2, noNaN: true }), other: fc.double() },
    top_p: { valid: unit, other: fc.double() },
    max_new_tokens: { valid: frames, other: fc.integer({ min: -10, max: 10000 }) },
    chunk_length: { valid: fc.integer({ min: 100, max: 300 }), other: fc.integer() },
    normalize: { valid: fc.boolean(), other: wild },
    sample_rate: { valid: fc.option(rate), other: fc.integer() },
    mp3_bitrate: { valid: fc.constantFrom(64, 128, 192), other: fc.integer() },
    opus_bitrate: { valid: fc.oneof(fc.constant(-1000), fc.integer({ min: 6, max: 510 })), other: fc.integer() },
    prosody: {
      valid: fc.option(
        fc.record(
          {
            speed: fc.double({ min: 0.25, max: 4, noNaN: true }),
            volume: fc.double({ min: -40, max: 20, noNaN: true }),
          },
          { requiredKeys: [] },
        ),
      ),
      other: fc.dictionary(fc.string({ maxLength: 6 }), wild, { maxKeys: 2 }),
    },
    latency: { valid: fc.constantFrom('normal', 'balanced', 'low'), other: fc.string() },
    repetition_penalty: { valid: fc.double({ min: 0, max: 2, noNaN: true }), other: fc.double() },
  },
  ['text', 'max_new_tokens'],
);

/** A msgpack body: a tts body where some values became bytes (allowed only as reference audio). */
export const msgpackBody = fc
  .tuple(ttsBody, fc.option(fc.constantFrom('text', 'format', 'seed', 'reference_id'), { freq: 4 }))
  .map(([drawn, binaryField]) => {
    if (binaryField === null) return drawn;
    const body: Record<string, unknown> = {
      ...drawn.body,
      [binaryField]: Buffer.from(String(drawn.body[binaryField] ?? 'x')),
    };
    return { body, valid: false };
  });

export interface DrawnUpload {
  readonly parts: readonly Part[];
  /** Cut the body at this fraction of its length (undefined: whole). */
  readonly cutAt: number | undefined;
}

const voiceName = fc.oneof(
  { arbitrary: fc.stringMatching(/^fz[a-z0-9_.-]{0,12}$/).filter((name) => !name.includes('..')), weight: 6 },
  { arbitrary: fc.string({ maxLength: 70 }), weight: 2 },
  { arbitrary: fc.constantFrom('../up', '.hidden', 'a/b', STORED_VOICE, ''), weight: 1 },
);
const uploadAudio = fc.oneof(
  { arbitrary: fc.double({ min: 0.01, max: 2, noNaN: true }).map((seconds) => toneWav(seconds)), weight: 6 },
  { arbitrary: fc.uint8Array({ maxLength: 256 }), weight: 2 },
  {
    arbitrary: fc
      .double({ min: 0.2, max: 1, noNaN: true })
      .map((fraction) => toneWav(1).subarray(0, Math.floor(fraction * 44100))),
    weight: 1,
  },
);

export const upload: fc.Arbitrary<DrawnUpload> = fc.record({
  parts: fc
    .tuple(
      fc.option(
        voiceName.map((value): Part => ({ name: 'name', value })),
        { freq: 10 },
      ),
      fc.option(
        anyText.map((value): Part => ({ name: 'text', value })),
        { freq: 10 },
      ),
      fc.option(
        fc.constantFrom('true', 'false', 'yes', '').map((value): Part => ({ name: 'overwrite', value })),
        { freq: 2 },
      ),
      fc.option(
        uploadAudio.map((value): Part => ({ name: 'audio', value, filename: 'upload.wav' })),
        { freq: 10 },
      ),
      fc.option(fc.record({ name: fc.string({ minLength: 1, maxLength: 8 }), value: fc.string({ maxLength: 8 }) }), {
        freq: 2,
      }),
    )
    .chain((parts) =>
      fc.shuffledSubarray(
        parts.filter((part): part is Part => part !== null),
        { minLength: 0 },
      ),
    ),
  cutAt: fc.option(fc.double({ min: 0, max: 0.999, noNaN: true }), { freq: 6, nil: undefined }),
});
