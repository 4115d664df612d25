// POST /v1/tts: Fish Speech's API (JSON or msgpack bodies), with the fields Fish's SDK sends by default. Output is
// the native 44.1 kHz unless sample_rate says otherwise; an unknown reference_id is a 404, never a silent default
// voice; max_new_tokens 0 means "as many frames as fit"; repetition_penalty is reported back as ignored.

import type { FastifyPluginAsyncTypebox, Static } from '@fastify/type-provider-typebox';
import { decode } from '@msgpack/msgpack';
import type { FastifyReply } from 'fastify';
import { DramaError } from '../../errors.ts';
import { DEFAULT_SAMPLING } from '../../model/types.ts';
import type { ServerContext } from '../context.ts';
import { clientGone } from '../outcomes.ts';
import { encodeReferences, seedOrRandom, voiceReferences } from '../request-fields.ts';
import { TtsBody } from '../schemas.ts';
import { replySpeech, type SpeechPlan } from '../speech-reply.ts';

/** msgpack carries reference audio as raw bytes; the schema (shared with JSON) takes base64 text there. Binary
 * anywhere else is refused by name, never turned into text and spoken. */
function bytesWhereAudio(value: unknown, path: string): unknown {
  if (value instanceof Uint8Array) {
    if (/^references\[\d+\]\.audio$/.test(path)) return Buffer.from(value).toString('base64');
    const field = path === '' ? 'body' : path;
    throw new DramaError('BINARY_NOT_ALLOWED', `'${field}' is binary; only references[].audio may be bytes`, {
      param: field,
    });
  }
  if (Array.isArray(value)) return value.map((item, index) => bytesWhereAudio(item, `${path}[${index}]`));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, bytesWhereAudio(item, path === '' ? key : `${path}.${key}`)]),
    );
  }
  return value;
}

/** Bit rate in bit/s from Fish's kbit/s fields; Fish's -1000 leaves the choice to the encoder. */
function bitrateOf(body: Static<typeof TtsBody>): number | undefined {
  if (body.format === 'mp3' && body.mp3_bitrate !== undefined) return body.mp3_bitrate * 1000;
  if (body.format === 'opus' && body.opus_bitrate !== undefined && body.opus_bitrate !== -1000)
    return body.opus_bitrate * 1000;
  return undefined;
}

async function planTts(context: ServerContext, body: Static<typeof TtsBody>, reply: FastifyReply): Promise<SpeechPlan> {
  const voice =
    body.reference_id == null ? [] : await voiceReferences(context.resolveVoice, body.reference_id, 'reference_id');
  const gone = () => clientGone(reply);
  const oneOff = await encodeReferences(context.referenceEncoder, body.references, voice.length, 'references', gone);
  return {
    route: 'tts',
    fieldNames: { input: 'text', max_frames: 'max_new_tokens' },
    format: body.format ?? 'wav',
    sampleRate: body.sample_rate ?? context.engine().info.sampleRate,
    bitrate: bitrateOf(body),
    speed: body.prosody?.speed,
    volumeDb: body.prosody?.volume,
    ignoredFields: body.repetition_penalty === undefined ? [] : ['repetition_penalty'],
    mode: body.streaming === true ? 'audio' : 'whole',
    job: {
      text: body.text,
      instructions: undefined,
      references: [...voice, ...oneOff],
      sampling: {
        ...DEFAULT_SAMPLING,
        seed: seedOrRandom(body.seed),
        temperature: body.temperature ?? DEFAULT_SAMPLING.temperature,
        topP: body.top_p ?? DEFAULT_SAMPLING.topP,
      },
      maxFrames: body.max_new_tokens === undefined || body.max_new_tokens === 0 ? undefined : body.max_new_tokens,
      normalize: body.normalize ?? true,
      pieceLength: body.chunk_length,
    },
  };
}

export function ttsRoute(context: ServerContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.addContentTypeParser('application/msgpack', { parseAs: 'buffer' }, (_request, body, done) => {
      let decoded: unknown;
      try {
        decoded = decode(body as Buffer);
      } catch (error) {
        done(new DramaError('MALFORMED_MSGPACK', `the body is not valid msgpack: ${String(error)}`, { param: 'body' }));
        return;
      }
      try {
        done(null, bytesWhereAudio(decoded, ''));
      } catch (error) {
        done(error as Error);
      }
    });
    app.post(
      '/v1/tts',
      { schema: { body: TtsBody, summary: 'Speak text (Fish Speech-compatible)', tags: ['speech'] } },
      async (request, reply) => {
        await replySpeech(context, reply, await planTts(context, request.body, reply));
        return reply;
      },
    );
  };
}
