// The voice catalog over HTTP (API.md "Voices"): GET/POST /v1/audio/voices, GET/DELETE /v1/audio/voices/{id}.
// An upload is multipart (`name`, `text`, optional `overwrite`, one `audio` file ≤ 10 MB); it is decoded and encoded
// once, then stored atomically. A malformed multipart body is a 400 with a code, never a 500; a transcript holding
// structural tokens is refused at upload rather than stored and refused with every later request. Deleting or
// replacing a voice drops its reference cache entries in the engine.
import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Engine } from '../../engine/engine.ts';
import { DramaError, isDramaError } from '../../errors.ts';
import { notFound, type Voice, type VoiceCatalog, voiceExists } from '../../voices/catalog.ts';
import type { VoiceEncoder } from '../../voices/encoder.ts';
import { checkVoiceName, checkVoiceText, MAX_VOICE_AUDIO_BYTES } from '../../voices/names.ts';
import type { ServerContext } from '../context.ts';
import { withinBodyTimeout } from '../timeouts.ts';
import { registerVoiceMetrics } from './voices-metrics.ts';

export interface VoicesOptions {
  readonly catalog: VoiceCatalog;
  readonly encoder: VoiceEncoder;
}

interface Upload {
  name?: string;
  text?: string;
  overwrite?: string;
  audio?: Buffer;
}

const UPLOAD_FIELDS = ['name', 'text', 'overwrite'];

function describeVoice(voice: Voice) {
  return {
    id: voice.name,
    name: voice.name,
    created_at: voice.createdAt,
    ref_text: voice.text,
    frames: voice.frames.length,
  };
}

/** A multipart parser error → the named error a client sees. */
function uploadError(error: unknown): unknown {
  const code = (error as { code?: string }).code;
  if (code === 'FST_REQ_FILE_TOO_LARGE') {
    return new DramaError('VOICE_AUDIO_TOO_LARGE', `the voice audio file is over ${MAX_VOICE_AUDIO_BYTES} bytes`, {
      kind: 'too_large',
      param: 'audio',
    });
  }
  if (code === 'FST_INVALID_MULTIPART_CONTENT_TYPE') {
    return new DramaError('VOICE_UPLOAD_NOT_MULTIPART', 'a voice upload is multipart/form-data (name, text, audio)', {
      param: 'body',
    });
  }
  if (code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT' || code === 'FST_PARTS_LIMIT') {
    return new DramaError('VOICE_UPLOAD_TOO_MANY_PARTS', `the voice upload has too many parts: ${messageOf(error)}`, {
      param: 'body',
    });
  }
  if (isDramaError(error)) return error;
  // Anything else the multipart parser throws (a missing boundary, a broken part header, a body cut short) is the
  // client's malformed body, never a server fault.
  return new DramaError('VOICE_UPLOAD_MALFORMED', `the voice upload is malformed multipart: ${messageOf(error)}`, {
    param: 'body',
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function readParts(request: FastifyRequest): Promise<Upload> {
  const upload: Upload = {};
  for await (const part of request.parts()) {
    if (part.type === 'file') {
      if (part.fieldname !== 'audio') throw unknownField(part.fieldname);
      upload.audio = await part.toBuffer();
    } else {
      if (!UPLOAD_FIELDS.includes(part.fieldname)) throw unknownField(part.fieldname);
      (upload as Record<string, unknown>)[part.fieldname] = String(part.value);
    }
  }
  return upload;
}

async function readUpload(request: FastifyRequest, reply: FastifyReply): Promise<Upload> {
  try {
    return await withinBodyTimeout(request, reply, readParts(request));
  } catch (error) {
    throw uploadError(error);
  }
}

function unknownField(name: string): DramaError {
  return new DramaError('UNKNOWN_FIELD', `unknown field '${name}' in the voice upload`, { param: name });
}

function missing(field: string): DramaError {
  return new DramaError('MISSING_FIELD', `missing required field '${field}'`, { param: field });
}

const IdParams = Type.Object({ id: Type.String() });

export function voicesRoutes(
  context: ServerContext,
  voices: VoicesOptions | undefined,
  engine: Promise<Engine>,
): FastifyPluginAsyncTypebox {
  return async (app) => {
    registerVoiceMetrics(context, voices?.catalog, engine, app.log);
    await app.register(multipart, {
      limits: { fileSize: MAX_VOICE_AUDIO_BYTES, files: 1, fields: UPLOAD_FIELDS.length, fieldSize: 64 * 1024 },
    });
    app.addHook('onClose', async () => voices?.encoder.close());
    voices?.catalog.onChange((change) => {
      // While the model loads there is no cache to clear.
      if (change.type !== 'added') void engine.then((ready) => ready.forgetVoice(change.name));
    });
    const catalog = (): VoiceCatalog => {
      if (voices === undefined) {
        throw new DramaError('VOICES_DISABLED', 'this server has no voice catalog (start it with --voices DIR)', {
          kind: 'not_found',
        });
      }
      return voices.catalog;
    };

    app.get('/v1/audio/voices', { schema: { summary: 'Voices in the catalog', tags: ['voices'] } }, async () => {
      await voices?.catalog.refresh();
      return { voices: voices === undefined ? [] : voices.catalog.list().map(describeVoice) };
    });

    app.get(
      '/v1/audio/voices/:id',
      { schema: { params: IdParams, summary: 'One voice', tags: ['voices'] } },
      async (request) => {
        const name = checkVoiceName(request.params.id, 'id');
        await catalog().refresh();
        const voice = catalog().get(name);
        if (voice === undefined) throw notFound(request.params.id);
        return describeVoice(voice);
      },
    );

    app.delete(
      '/v1/audio/voices/:id',
      { schema: { params: IdParams, summary: 'Delete a voice', tags: ['voices'] } },
      async (request) => {
        const name = checkVoiceName(request.params.id, 'id');
        await catalog().remove(name);
        return { id: name, deleted: true };
      },
    );

    app.post(
      '/v1/audio/voices',
      {
        schema: {
          summary: 'Add a voice (multipart: name, text, audio, optional overwrite=true)',
          tags: ['voices'],
          consumes: ['multipart/form-data'],
        },
      },
      async (request, reply) => {
        const target = catalog();
        const upload = await readUpload(request, reply);
        if (upload.name === undefined) throw missing('name');
        const name = checkVoiceName(upload.name);
        if (upload.text === undefined) throw missing('text');
        const text = checkVoiceText(upload.text);
        if (upload.overwrite !== undefined && upload.overwrite !== 'true' && upload.overwrite !== 'false') {
          throw new DramaError('INVALID_FIELD', `'overwrite' must be true or false, got '${upload.overwrite}'`, {
            param: 'overwrite',
          });
        }
        const overwrite = upload.overwrite === 'true';
        // Refused before the upload is encoded; the catalog checks again when it writes.
        if (!overwrite && target.get(name) !== undefined) throw voiceExists(name);
        if (upload.audio === undefined) throw missing('audio');
        const audio = new Uint8Array(upload.audio.buffer, upload.audio.byteOffset, upload.audio.length);
        // The encoder refuses a transcript with structural tokens as input text is refused, before any decoding.
        const encoded = await voices!.encoder.encode(audio, text);
        const voice = await target.add({
          name,
          text,
          audio,
          audioExtension: encoded.extension,
          frames: encoded.frames,
          overwrite,
        });
        return reply.code(201).send(describeVoice(voice));
      },
    );
  };
}
