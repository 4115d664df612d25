// A speech request's reference as the server, the voice catalog and the engine pass it along.
import type { Frame } from './types.ts';

/** One reference for one-off cloning: the uploaded audio file's bytes and its transcript. */
export interface ReferenceInput {
  readonly audio: Uint8Array;
  readonly text: string;
  /** Frames already encoded (a catalog voice): used as they are, the audio is not encoded again. */
  readonly frames?: readonly Frame[];
  /** The catalog voice this reference comes from (reference cache entries are dropped with it). */
  readonly voice?: string;
}
