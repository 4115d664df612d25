// Contracts 1–3 as checks over one speech model, each returning its mismatches (empty when the contract holds) so
// that the GPU test asserts none and the cpu controls show a planted fault gives some: the same request twice,
// prefill in several chunkings against one whole chunk, and every request alone against batched with neighbours.
import type { SpeechModel } from '../../../src/model/types.ts';
import {
  type Drawn,
  type FramesRequest,
  firstDrawnMismatch,
  framesAlone,
  framesBatched,
  framesPrefilledTogether,
} from './speech-model-frames.ts';

/** Contract 1 in one process: the same request twice on one model. */
export function repeatMismatches(model: SpeechModel, request: FramesRequest, frames: number, chunk: number): string[] {
  const first = framesAlone(model, request, frames, chunk);
  const second = framesAlone(model, request, frames, chunk);
  const mismatch = firstDrawnMismatch(first, second);
  return mismatch === undefined ? [] : [`second run against the first: ${mismatch}`];
}

/** Contract 2: prefill in each of `chunks` against the whole prompt as one chunk. */
export function chunkingMismatches(
  model: SpeechModel,
  request: FramesRequest,
  frames: number,
  chunks: readonly number[],
): string[] {
  const whole = framesAlone(model, request, frames, request.rows.tokens.length);
  const mismatches: string[] = [];
  for (const chunk of chunks) {
    const mismatch = firstDrawnMismatch(whole, framesAlone(model, request, frames, chunk));
    if (mismatch !== undefined) mismatches.push(`prefill in chunks of ${chunk} against one chunk: ${mismatch}`);
  }
  return mismatches;
}

/**
 * Contract 3: each request batched in groups of each size against alone, the neighbours joining `joinSpacing` rounds
 * apart (framesBatched: 0 steps the whole group together).
 */
export function batchingMismatches(
  model: SpeechModel,
  requests: readonly FramesRequest[],
  sizes: readonly number[],
  frames: number,
  chunk: number,
  joinSpacing?: number,
): { expected: Drawn[]; mismatches: string[] } {
  const expected = requests.map((request) => framesAlone(model, request, frames, chunk));
  const mismatches: string[] = [];
  for (const size of sizes) {
    for (let first = 0; first < requests.length; first += size) {
      const members = Array.from({ length: size }, (_, offset) => (first + offset) % requests.length);
      const results = framesBatched(
        model,
        members.map((index) => requests[index]!),
        frames,
        chunk,
        joinSpacing,
      );
      members.forEach((index, position) => {
        const mismatch = firstDrawnMismatch(expected[index]!, results[position]!);
        if (mismatch === undefined) return;
        mismatches.push(`request ${index} as lane ${position} of a batch of ${size} against alone: ${mismatch}`);
      });
    }
  }
  return { expected, mismatches };
}

/** Contract 3 for prefill: the requests prefilled together (several lanes a call) against each alone. */
export function jointPrefillMismatches(
  model: SpeechModel,
  requests: readonly FramesRequest[],
  expected: readonly Drawn[],
  frames: number,
): string[] {
  const together = framesPrefilledTogether(model, requests, frames);
  return requests.flatMap((_, index) => {
    const mismatch = firstDrawnMismatch(expected[index]!, together[index]!);
    return mismatch === undefined ? [] : [`request ${index} prefilled with ${requests.length - 1} others: ${mismatch}`];
  });
}
