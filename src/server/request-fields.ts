// Field conversions shared by the OpenAI and Fish routes: reference audio from base64 or a data URL, voices to
// references, and the seed (a fresh random one when the client gives none, reported back in X-Seed).
import { randomInt } from 'node:crypto';
import { DramaError } from '../errors.ts';
import type { ReferenceInput } from '../model/reference-input.ts';
import { notFound } from '../voices/catalog.ts';
import { MAX_VOICE_AUDIO_BYTES } from '../voices/names.ts';
import type { VoiceResolver } from '../voices/resolver.ts';

/** Uploaded reference audio is capped like voice uploads (API.md: ≤ 10 MB). */
export const MAX_REFERENCE_BYTES = MAX_VOICE_AUDIO_BYTES;

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

export function decodeReferences(
  references: readonly { audio: string; text: string }[] | undefined,
  param: string,
): ReferenceInput[] {
  return (references ?? []).map((reference, index) => ({
    audio: decodeReferenceAudio(reference.audio, `${param}[${index}].audio`),
    text: reference.text,
  }));
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
