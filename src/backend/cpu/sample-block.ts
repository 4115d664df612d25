// The sampler op over a batch of lanes on the cpu: reads each lane's settings from the lane table, draws with
// ops/sampler.ts, keeps the RAS window in its slot's slab row and writes the picks into the batch's frame records
// [B, 1 + K] = (token, code[0..K−1]).
//   main: a normal draw (draw 0); a semantic pick already in the slot's RAS window is redrawn (draw 1) at
//   temperature 1.0, top-p 0.9 and the lane's top-k; a semantic pick goes to window entry frame mod 16. The record
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
import { argmax, type DrawScratch, drawCandidate } from './ops/sampler.ts';
import type { CpuBuffer, CpuTensor } from './tensors.ts';

/** The settings a repeated semantic token is redrawn with (top-k stays the lane's), as float32 like the lane table. */
const RAS_TEMPERATURE = 1.0;
const RAS_TOP_P = Math.fround(0.9);
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

export class BatchSampler {
  private readonly key: MutableKey = { seedLow: 0, seedHigh: 0, frame: 0, column: 0, draw: 0 };

  constructor(private readonly scratch: (count: number) => DrawScratch) {}

  private drawFor(logits: FloatArray, offset: number, count: number, lanes: Int32Array, entry: number, draw: number) {
    const key = this.key;
    key.seedLow = lanes[entry + LANE_SEED_LOW]! >>> 0;
    key.seedHigh = lanes[entry + LANE_SEED_HIGH]! >>> 0;
    key.frame = lanes[entry + LANE_FRAME]!;
    key.draw = draw;
    const topK = lanes[entry + LANE_TOP_K]!;
    const temperature = draw === RAS_DRAW ? RAS_TEMPERATURE : float32FromBits(lanes[entry + LANE_TEMPERATURE]!);
    const topP = draw === RAS_DRAW ? RAS_TOP_P : float32FromBits(lanes[entry + LANE_TOP_P]!);
    return drawCandidate(logits, offset, count, temperature, topP, topK, key, this.scratch(count));
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
      let chosen: number;
      if (lanes[entry + LANE_GREEDY]! !== 0) {
        chosen = argmax(logits, count, offset);
      } else {
        chosen = this.drawFor(logits, offset, count, lanes, entry, NORMAL_DRAW);
        if (chosen < semanticCount && inWindow(window, windowStart, chosen)) {
          chosen = this.drawFor(logits, offset, count, lanes, entry, RAS_DRAW);
        }
      }
      const semantic = chosen < semanticCount;
      if (semantic) window[windowStart + (lanes[entry + LANE_FRAME]! % RAS_WINDOW)] = chosen;
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
          ? argmax(logits, count, offset)
          : this.drawFor(logits, offset, count, lanes, entry, NORMAL_DRAW);
    }
  }
}

function inWindow(window: Int32Array, start: number, code: number): boolean {
  for (let i = 0; i < RAS_WINDOW; i++) if (window[start + i] === code) return true;
  return false;
}
