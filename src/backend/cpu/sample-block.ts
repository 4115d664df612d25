// The sampler op over a batch of lanes on the cpu: reads each lane's settings from the lane table, draws with
// ops/sampling.ts (the sampler kernel's reference), keeps the RAS window in its slot's slab row and writes the picks into the batch's frame records
// [B, 1 + K] = (token, code[0..K−1]).
//   main: a normal draw (draw 0); a semantic pick already in the slot's RAS window is redrawn (draw 1) at
//   temperature 1.0, top-p 0.9 and the lane's top-k; a drawn semantic pick goes to window entry frame mod 16. The record
//   gets (candidates[pick], pick) for a semantic pick, (candidates[pick], −1) otherwise (end of speech).
//   code[column]: a normal draw at column `column`, written to records[b][1 + column].
import { float32FromBits } from '../../numeric/dtypes.ts';
import type { FloatArray } from '../../numeric/float-array.ts';
import {
  LANE_ENTRY,
  LANE_FRAME,
  LANE_GREEDY,
  LANE_SEED_HIGH,
  LANE_SEED_LOW,
  LANE_SLOT,
  LANE_TEMPERATURE,
  LANE_TOP_K,
  LANE_TOP_P,
  RAS_WINDOW,
  type SamplerState,
} from '../types.ts';
import { argmaxLogits, type DrawScratch, drawFromLogits, RAS_SETTINGS } from './ops/sampling.ts';
import type { CpuBuffer, CpuTensor } from './tensors.ts';

const NORMAL_DRAW = 0;
const RAS_DRAW = 1;

/** A reusable draw key (one per backend), so that a step creates no objects per draw. */
interface MutableKey {
  seedLow: number;
  seedHigh: number;
  frame: number;
  column: number;
  draw: number;
}

/** Reusable draw settings, likewise. */
interface MutableSettings {
  temperature: number;
  topP: number;
  topK: number;
}

export class BatchSampler {
  private readonly key: MutableKey = { seedLow: 0, seedHigh: 0, frame: 0, column: 0, draw: 0 };
  private readonly settings: MutableSettings = { temperature: 1, topP: 1, topK: 0 };

  constructor(private readonly scratch: (count: number) => DrawScratch) {}

  private drawFor(logits: FloatArray, offset: number, count: number, lanes: Int32Array, entry: number, draw: number) {
    const key = this.key;
    key.seedLow = lanes[entry + LANE_SEED_LOW]! >>> 0;
    key.seedHigh = lanes[entry + LANE_SEED_HIGH]! >>> 0;
    key.frame = lanes[entry + LANE_FRAME]!;
    key.draw = draw;
    const settings = this.settings;
    settings.topK = lanes[entry + LANE_TOP_K]!;
    settings.temperature =
      draw === RAS_DRAW ? RAS_SETTINGS.temperature : float32FromBits(lanes[entry + LANE_TEMPERATURE]!);
    settings.topP = draw === RAS_DRAW ? RAS_SETTINGS.topP : float32FromBits(lanes[entry + LANE_TOP_P]!);
    return drawFromLogits(logits, offset, count, settings, key, this.scratch(count));
  }

  main(
    logits: FloatArray,
    count: number,
    semanticCount: number,
    candidates: CpuTensor,
    state: SamplerState<CpuBuffer>,
    records: Int32Array,
    recordWidth: number,
    batch: number,
  ): void {
    const lanes = state.lanes as Int32Array;
    const window = state.rasWindow.data as Int32Array;
    const ids = candidates.data as Int32Array;
    this.key.column = 0;
    for (let b = 0; b < batch; b++) {
      const entry = b * LANE_ENTRY;
      const offset = b * count;
      const windowStart = lanes[entry + LANE_SLOT]! * RAS_WINDOW;
      const greedy = lanes[entry + LANE_GREEDY]! !== 0;
      let chosen: number;
      if (greedy) {
        chosen = argmaxLogits(logits, offset, count);
      } else {
        chosen = this.drawFor(logits, offset, count, lanes, entry, NORMAL_DRAW);
        if (chosen < semanticCount && inWindow(window, windowStart, chosen)) {
          chosen = this.drawFor(logits, offset, count, lanes, entry, RAS_DRAW);
        }
      }
      const semantic = chosen < semanticCount;
      // As the kernel does: greedy lanes never read the window, so they leave it as it is.
      if (semantic && !greedy) window[windowStart + (lanes[entry + LANE_FRAME]! % RAS_WINDOW)] = chosen;
      records[b * recordWidth] = ids[chosen]!;
      records[b * recordWidth + 1] = semantic ? chosen : -1;
    }
  }

  code(
    logits: FloatArray,
    count: number,
    column: number,
    state: SamplerState<CpuBuffer>,
    records: Int32Array,
    recordWidth: number,
    batch: number,
  ): void {
    const lanes = state.lanes as Int32Array;
    for (let b = 0; b < batch; b++) {
      const entry = b * LANE_ENTRY;
      const offset = b * count;
      this.key.column = column;
      records[b * recordWidth + 1 + column] =
        lanes[entry + LANE_GREEDY]! !== 0
          ? argmaxLogits(logits, offset, count)
          : this.drawFor(logits, offset, count, lanes, entry, NORMAL_DRAW);
    }
  }
}

function inWindow(window: Int32Array, start: number, code: number): boolean {
  for (let i = 0; i < RAS_WINDOW; i++) if (window[start + i] === code) return true;
  return false;
}
