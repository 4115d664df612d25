// POST /v1/audio/speech: OpenAI's speech API with drama3's extensions (API.md). Whole file, chunked audio stream or
// server-sent events; `speed` stretches time with the pitch kept (WSOLA).
import type { FastifyPluginAsyncTypebox, Static } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { NATIVE_SAMPLE_RATE, PCM_DEFAULT_SAMPLE_RATE } from '../../audio/formats.ts';
import { DEFAULT_SAMPLING } from '../../model/types.ts';
import type { ServerContext } from '../context.ts';
import { clientGone } from '../outcomes.ts';
import { encodeReferences, seedOrRandom, voiceReferences } from '../request-fields.ts';
import { SpeechBody } from '../schemas.ts';
import { replySpeech, type SpeechPlan } from '../speech-reply.ts';

async function planSpeech(
  context: ServerContext,
  body: Static<typeof SpeechBody>,
  reply: FastifyReply,
): Promise<SpeechPlan> {
  const voiceName = typeof body.voice === 'object' ? body.voice.id : (body.voice ?? 'default');
  const voice = await voiceReferences(context.resolveVoice, voiceName, 'voice');
  const gone = () => clientGone(reply);
  const oneOff = await encodeReferences(context.referenceEncoder, body.references, voice.length, 'references', gone);
  const references = [...voice, ...oneOff];
  const format = body.response_format ?? 'mp3';
  return {
    route: 'speech',
    fieldNames: { text: 'input' },
    format,
    speed: body.speed,
    sampleRate: body.sample_rate ?? (format === 'pcm' ? PCM_DEFAULT_SAMPLE_RATE : NATIVE_SAMPLE_RATE),
    mode:
      body.stream_format === 'sse' ? 'sse' : body.stream_format === 'audio' || body.stream === true ? 'audio' : 'whole',
    job: {
      text: body.input,
      instructions: body.instructions,
      references,
      sampling: {
        ...DEFAULT_SAMPLING,
        seed: seedOrRandom(body.seed),
        temperature: body.temperature ?? DEFAULT_SAMPLING.temperature,
        topP: body.top_p ?? DEFAULT_SAMPLING.topP,
        topK: body.top_k ?? DEFAULT_SAMPLING.topK,
      },
      maxFrames: body.max_frames,
      normalize: true,
      pieceLength: undefined,
    },
  };
}

export function speechRoute(context: ServerContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/v1/audio/speech',
      { schema: { body: SpeechBody, summary: 'Speak text (OpenAI-compatible)', tags: ['speech'] } },
      async (request, reply) => {
        await replySpeech(context, reply, await planSpeech(context, request.body, reply));
        return reply;
      },
    );
  };
}
