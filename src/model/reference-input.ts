// A speech request's reference as the server, the voice catalog and the engine pass it along.
import type { Frame } from './types.ts';

/** One reference voice: its transcript and its encoded frames. Audio is decoded and encoded before it reaches the
 * engine (in the voice encoder's thread), so that no upload ever runs inside a frame round. */
export interface ReferenceInput {
  readonly text: string;
  readonly frames: readonly Frame[];
  /** The catalog voice this reference comes from (reference cache entries are dropped with it). */
  readonly voice?: string;
}
