// Request bodies as TypeBox schemas (validation, OpenAPI and types from one source). Every object refuses unknown
// fields, so a client's misspelled or unsupported option is named in a 400 instead of silently ignored.
import { Type } from '@fastify/type-provider-typebox';
import { MAX_REFERENCES } from './request-fields.ts';

export const SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;
export type SpeechFormat = (typeof SPEECH_FORMATS)[number];

const Reference = Type.Object(
  {
    // msgpack bodies carry these bytes raw; they arrive here as base64 text like JSON's.
    audio: Type.String({ minLength: 1, description: 'base64 or a data URL of a wav/mp3/flac/ogg/aac file' }),
    text: Type.String({ description: 'transcript of the reference audio' }),
  },
  { additionalProperties: false },
);

const Seed = Type.Integer({ minimum: 0, maximum: 4294967295 });

export const SpeechBody = Type.Object(
  {
    model: Type.Optional(Type.String()),
    input: Type.String({ minLength: 1 }),
    voice: Type.Optional(
      Type.Union([
        Type.String({ minLength: 1 }),
        Type.Object({ id: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
      ]),
    ),
    instructions: Type.Optional(Type.String()),
    response_format: Type.Optional(
      Type.Union([
        Type.Literal('mp3'),
        Type.Literal('opus'),
        Type.Literal('aac'),
        Type.Literal('flac'),
        Type.Literal('wav'),
        Type.Literal('pcm'),
      ]),
    ),
    speed: Type.Optional(Type.Number({ minimum: 0.25, maximum: 4 })),
    stream_format: Type.Optional(Type.Union([Type.Literal('audio'), Type.Literal('sse')])),
    sample_rate: Type.Optional(Type.Integer({ minimum: 8000, maximum: 48000 })),
    seed: Type.Optional(Seed),
    temperature: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 2 })),
    top_p: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1 })),
    top_k: Type.Optional(Type.Integer({ minimum: 1, maximum: 4097 })),
    max_frames: Type.Optional(Type.Integer({ minimum: 1 })),
    references: Type.Optional(Type.Array(Reference, { maxItems: MAX_REFERENCES })),
    stream: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const TtsBody = Type.Object(
  {
    text: Type.String({ minLength: 1 }),
    references: Type.Optional(Type.Array(Reference, { maxItems: MAX_REFERENCES })),
    reference_id: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Null()])),
    format: Type.Optional(
      Type.Union([Type.Literal('wav'), Type.Literal('pcm'), Type.Literal('mp3'), Type.Literal('opus')]),
    ),
    streaming: Type.Optional(Type.Boolean()),
    seed: Type.Optional(Type.Union([Seed, Type.Null()])),
    temperature: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 2 })),
    top_p: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1 })),
    max_new_tokens: Type.Optional(Type.Integer({ minimum: 0 })),
    chunk_length: Type.Optional(Type.Integer({ minimum: 100, maximum: 300 })),
    normalize: Type.Optional(Type.Boolean()),
    sample_rate: Type.Optional(Type.Union([Type.Integer({ minimum: 8000, maximum: 48000 }), Type.Null()])),
    mp3_bitrate: Type.Optional(Type.Union([Type.Literal(64), Type.Literal(128), Type.Literal(192)])),
    // kbit/s; -1000 means the encoder's own choice.
    opus_bitrate: Type.Optional(Type.Union([Type.Literal(-1000), Type.Integer({ minimum: 6, maximum: 510 })])),
    prosody: Type.Optional(
      Type.Union([
        Type.Object(
          {
            speed: Type.Optional(Type.Number({ minimum: 0.25, maximum: 4 })),
            volume: Type.Optional(Type.Number({ minimum: -40, maximum: 20, description: 'gain in dB' })),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ]),
    ),
    // The release sampler uses repetition-aware sampling instead; the value is accepted and reported as ignored.
    repetition_penalty: Type.Optional(Type.Number({ minimum: 0 })),
    // Fish clients send these scheduling hints; they do not change the audio.
    latency: Type.Optional(Type.Union([Type.Literal('normal'), Type.Literal('balanced'), Type.Literal('low')])),
    use_memory_cache: Type.Optional(Type.Union([Type.Literal('on'), Type.Literal('off')])),
  },
  { additionalProperties: false },
);
