// Per-lane sampling state for the frame loop: a lane's settings in the device's precision and its RAS window, over
// the one definition of a draw in src/backend/cpu/ops/sampling.ts (which the sampler kernel reproduces bit for bit).
import {
  DrawScratch,
  drawCode,
  drawMain,
  type LaneSampling,
  laneSampling,
  RAS_WINDOW,
} from '../backend/cpu/ops/sampling.ts';
import type { SamplingSettings } from './types.ts';

export class FrameSampler {
  private readonly window = new Int32Array(RAS_WINDOW).fill(-1);
  private readonly lane: LaneSampling;
  private readonly scratch: DrawScratch;

  constructor(
    readonly settings: SamplingSettings,
    maxCandidates: number,
  ) {
    this.lane = laneSampling(settings);
    this.scratch = new DrawScratch(maxCandidates);
  }

  /** Draws `main` for frame `frame`; semantic candidates are indices below `semanticCount`. */
  drawMain(logits: ArrayLike<number>, count: number, semanticCount: number, frame: number): number {
    return drawMain(logits, 0, count, semanticCount, this.lane, frame, this.window, 0, this.scratch);
  }

  /** Draws code[column] (column 1..9) of frame `frame` from its codebook logits. */
  drawCode(logits: ArrayLike<number>, count: number, frame: number, column: number): number {
    return drawCode(logits, 0, count, this.lane, frame, column, this.scratch);
  }
}
