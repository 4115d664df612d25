// Voice names in speech requests → references, through the catalog: a catalog voice gives its transcript and its
// stored frames (the engine does not encode its audio again); `default` and OpenAI's built-in names mean the default
// voice unless the catalog defines them; any other name is unknown (404, never the default voice).

import type { ReferenceInput } from '../engine/protocol.ts';
import type { VoiceResolver } from '../server/context.ts';
import { defaultVoiceOnly } from '../server/context.ts';
import type { Voice, VoiceCatalog } from './catalog.ts';

/** How stale the resolver lets its view of the folder get (voices changed by the command line). */
const REFRESH_MILLISECONDS = 1000;

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
