// Field conversions shared by the OpenAI and Fish routes: reference audio from base64 or a data URL, encoded to frames
// in the voice encoder's thread (the count limit checked before anything is decoded), voices to references, and the
// seed (a fresh random one when the client gives none, reported back in X-Seed).
import { randomInt } from 'node:crypto';
import { DramaError, isDramaError } from '../errors.ts';
import type { ReferenceInput } from '../model/reference-input.ts';
import { DEFAULT_TEXT_LIMITS } from '../text/limits.ts';
import { notFound } from '../voices/catalog.ts';
import type { VoiceEncoder } from '../voices/encoder.ts';
import { MAX_VOICE_AUDIO_BYTES } from '../voices/names.ts';
import type { VoiceResolver } from '../voices/resolver.ts';

/** Uploaded reference audio is capped like voice uploads (API.md: ≤ 10 MB). */
export const MAX_REFERENCE_BYTES = MAX_VOICE_AUDIO_BYTES;
/** References one request may carry, its voice's included: the prompt builder's limit, also the schemas'. */
export const MAX_REFERENCES = DEFAULT_TEXT_LIMITS.maxReferences;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export function decodeReferenceAudio(value: string, param: string): Uint8Array {
  const comma = value.startsWith('data:') ? value.indexOf(',') : -1;
  if (value.startsWith('data:') && (comma < 0 || !value.slice(0, comma).endsWith(';base64'))) {
    throw new DramaError('REFERENCE_AUDIO_INVALID', `${param} is a data URL without base64 content`, { param });
  }
  const payload = (comma >= 0 ? value.slice(comma + 1) : value).replace(/\s+/g, '');
  if (!BASE64.test(payload) || payload.length % 4 === 1) {
    throw new DramaError('REFERENCE_AUDIO_INVALID', `${param} is neither base64 nor a base64 data URL`, { param });
  }
  const bytes = Buffer.from(payload, 'base64');
  if (bytes.length > MAX_REFERENCE_BYTES) {
    throw new DramaError(
      'REFERENCE_AUDIO_TOO_LARGE',
      `${param} has ${bytes.length} bytes; the limit is ${MAX_REFERENCE_BYTES}`,
      {
        kind: 'too_large',
        param,
      },
    );
  }
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
}

/** An encoder error about `audio` or `text` renamed to the reference's field. */
function asReferenceError(error: unknown, param: string): unknown {
  if (!isDramaError(error) || (error.param !== 'audio' && error.param !== 'text')) return error;
  return new DramaError(error.code, error.message, {
    kind: error.kind,
    param: `${param}.${error.param}`,
    cause: error,
  });
}

/**
 * A request's one-off references → frames, in the voice encoder's thread, one at a time. The count is checked first
 * (with the voice's own references), then each audio's size, before anything is decoded; `stop` says the client left.
 */
export async function encodeReferences(
  encoder: VoiceEncoder | undefined,
  references: readonly { audio: string; text: string }[] | undefined,
  voiceReferences: number,
  param: string,
  stop: () => boolean,
): Promise<ReferenceInput[]> {
  const given = references ?? [];
  if (given.length === 0) return [];
  if (given.length + voiceReferences > MAX_REFERENCES) {
    throw new DramaError(
      'TOO_MANY_REFERENCES',
      `the request has ${given.length + voiceReferences} references (its voice's included); the limit is ${MAX_REFERENCES}`,
      { param },
    );
  }
  const audio = given.map((reference, index) => decodeReferenceAudio(reference.audio, `${param}[${index}].audio`));
  if (encoder === undefined) {
    throw new DramaError('REFERENCES_UNSUPPORTED', 'this server cannot encode reference audio (no codec encoder)', {
      param,
    });
  }
  const encoded: ReferenceInput[] = [];
  for (const [index, reference] of given.entries()) {
    if (stop()) break;
    const upload = await encoder
      .encode(audio[index]!, reference.text)
      .catch((error: unknown) => Promise.reject(asReferenceError(error, `${param}[${index}]`)));
    encoded.push({ text: reference.text, frames: upload.frames });
  }
  return encoded;
}

export async function voiceReferences(
  resolve: VoiceResolver,
  name: string,
  param: string,
): Promise<readonly ReferenceInput[]> {
  const references = await resolve(name);
  if (references === undefined) throw notFound(name, param);
  return references;
}

export function seedOrRandom(seed: number | null | undefined): number {
  return seed ?? randomInt(0, 2 ** 32);
}
