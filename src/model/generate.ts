// One request end to end on a SpeechModel: prompt rows → prefill in pieces of at most `prefillChunk` rows → frame
// rounds until end of speech (`stop`) or the frame budget (`length`).
import { DramaError } from '../errors.ts';
import type { FinishReason, Frame, PromptRows, SamplingSettings, SpeechModel } from './types.ts';

export interface GenerateOptions {
  readonly sampling: SamplingSettings;
  /** Frame budget: generation stops with `length` after this many frames without end of speech. */
  readonly maxFrames: number;
  /** Most prompt rows per prefill call. */
  readonly prefillChunk: number;
  /** Called with each frame as it is drawn. */
  readonly onFrame?: (frame: Frame, index: number) => void;
}

export interface GeneratedFrames {
  readonly frames: Frame[];
  readonly finishReason: FinishReason;
  /** Time spent in prefill and in frame rounds, in milliseconds. */
  readonly prefillMilliseconds: number;
  readonly framesMilliseconds: number;
}

export function generateFrames(model: SpeechModel, rows: PromptRows, options: GenerateOptions): GeneratedFrames {
  const { maxFrames, prefillChunk } = options;
  if (!Number.isInteger(maxFrames) || maxFrames < 0) {
    throw new DramaError('FRAME_BUDGET_INVALID', `frame budget ${maxFrames} must be a non-negative integer`, {
      param: 'frames',
    });
  }
  if (!Number.isInteger(prefillChunk) || prefillChunk < 1) {
    throw new DramaError('PREFILL_CHUNK_INVALID', `prefill chunk ${prefillChunk} must be a positive integer`, {
      param: 'prefill-chunk',
    });
  }
  const total = rows.tokens.length;
  if (total + maxFrames + 1 > model.contextRows) {
    throw new DramaError(
      'CONTEXT_EXCEEDED',
      `${total} prompt rows + ${maxFrames} frames + 1 exceed the model context of ${model.contextRows} rows`,
      { param: 'frames' },
    );
  }
  const lane = model.newLane(options.sampling);
  try {
    const started = performance.now();
    for (let from = 0; from < total; from += prefillChunk)
      model.prefill(lane, rows, from, Math.min(total, from + prefillChunk));
    const prefilled = performance.now();
    const frames: Frame[] = [];
    let finishReason: FinishReason = 'length';
    while (frames.length < maxFrames) {
      const outcome = model.step([lane])[0]!;
      if (outcome.end) {
        finishReason = 'stop';
        break;
      }
      options.onFrame?.(outcome.frame, frames.length);
      frames.push(outcome.frame);
    }
    return {
      frames,
      finishReason,
      prefillMilliseconds: prefilled - started,
      framesMilliseconds: performance.now() - prefilled,
    };
  } finally {
    model.release(lane);
  }
}
