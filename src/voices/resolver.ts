// Voice names in speech requests → references, through the catalog: a catalog voice gives its transcript and its
// stored frames (the engine does not encode its audio again); `default` and OpenAI's built-in names mean the default
// voice unless the catalog defines them; any other name is unknown (404, never the default voice).

import type { ReferenceInput } from '../model/reference-input.ts';
import type { Voice, VoiceCatalog } from './catalog.ts';

/** Named voices → their references; `undefined` when the name is unknown. The default voice has none. */
export type VoiceResolver = (name: string) => Promise<readonly ReferenceInput[] | undefined>;
/** How stale the resolver lets its view of the folder get (voices changed by the command line). */
const REFRESH_MILLISECONDS = 1000;

/** OpenAI's built-in voice names: clients send them, and they mean the default voice unless a catalog defines them. */
const OPENAI_VOICES = [
  'alloy',
  'ash',
  'ballad',
  'cedar',
  'coral',
  'echo',
  'fable',
  'marin',
  'nova',
  'onyx',
  'sage',
  'shimmer',
  'verse',
];

/** The resolver used when no voice catalog is configured: default and OpenAI's names only. */
export const defaultVoiceOnly: VoiceResolver = async (name) =>
  name === 'default' || OPENAI_VOICES.includes(name) ? [] : undefined;

/** A catalog voice as a reference: its transcript and stored frames. */
export function catalogReference(voice: Voice): ReferenceInput {
  return { text: voice.text, frames: voice.frames, voice: voice.name };
}

export function catalogResolver(catalog: VoiceCatalog): VoiceResolver {
  return async (name) => {
    await catalog.refreshIfOlder(REFRESH_MILLISECONDS);
    const voice = catalog.get(name);
    if (voice === undefined) return defaultVoiceOnly(name);
    return [catalogReference(voice)];
  };
}
