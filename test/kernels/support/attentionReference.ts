// The attention family's geometries, inputs and fp64 references, shared by its contract cases and its schedule
// (invariance, equivalence) cases. The references call the cpu ops per row, rounding to bf16 where the kernels and
// the cpu bf16 path round (kernels/cuda/attention.cu lists the rounding points).
import { sigmoid } from '../../../src/backend/cpu/ops/activations.ts';
import { slotAttention } from '../../../src/backend/cpu/ops/attention.ts';
import { applyRope, type RopeStyle } from '../../../src/backend/cpu/ops/rope.ts';
import { ATTENTION_SPLIT_KEYS } from '../../../src/backend/cuda/ops/attention.ts';
import { roundToBf16 } from '../../../src/numeric/dtypes.ts';
import { rmsNormZeroCentred } from '../../../src/numeric/norms.ts';
import type { Bf16Tensor, Random } from './random.ts';
import { randomBf16 } from './random.ts';

export interface AttentionGeometry {
  readonly label: string;
  readonly queryHeads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly rotaryDims: number;
  readonly style: RopeStyle;
  readonly gated: boolean;
}

export const ATTENTION_THETA = 1e7;
export const ATTENTION_EPS = 1e-6;

/** MODEL.md §2: 16 query heads, 2 KV heads, D 256, NeoX RoPE on the first 64 dims, output gate. */
export const BACKBONE: AttentionGeometry = {
  label: 'backbone',
  queryHeads: 16,
  kvHeads: 2,
  headDim: 256,
  rotaryDims: 64,
  style: 'neox',
  gated: true,
};
/** MODEL.md §3 synthetic full geometry: interleaved RoPE on the first 64 dims, no gate. */
export const TOWER: AttentionGeometry = { ...BACKBONE, label: 'tower', style: 'interleaved', gated: false };
export const ODD_D64: AttentionGeometry = {
  label: 'D 64, 6:3 heads',
  queryHeads: 6,
  kvHeads: 3,
  headDim: 64,
  rotaryDims: 32,
  style: 'neox',
  gated: true,
};
export const ODD_D128: AttentionGeometry = {
  label: 'D 128, 8:1 heads',
  queryHeads: 8,
  kvHeads: 1,
  headDim: 128,
  rotaryDims: 64,
  style: 'interleaved',
  gated: false,
};

/**
 * Slab rows past which a decode call of at most 4 rows may reach more splits than the few-rows walk takes: 65 splits,
 * so one row past 16384 keys is 130 of the per-row walk's blocks at 2 KV heads (the bound is 128), and the launcher
 * runs the few-rows kernel's shared form over such a slab.
 */
export const LONG_SLAB_ROWS = 65 * ATTENTION_SPLIT_KEYS;

/** The rows of one call: row r is (slots[r], positions[r]). */
export interface CallRows {
  readonly slots: Int32Array;
  readonly positions: Int32Array;
}

export function rowTable(rows: CallRows): Int32Array {
  const table = new Int32Array(2 * rows.slots.length);
  for (let row = 0; row < rows.slots.length; row++) {
    table[2 * row] = rows.slots[row]!;
    table[2 * row + 1] = rows.positions[row]!;
  }
  return table;
}

export function sequenceRows(slot: number, start: number, count: number): CallRows {
  const positions = new Int32Array(count);
  for (let row = 0; row < count; row++) positions[row] = start + row;
  return { slots: new Int32Array(count).fill(slot), positions };
}

export function zerosBf16(count: number): Bf16Tensor {
  return { bits: new Uint16Array(count), values: new Float64Array(count) };
}

/** A slab [slots, capacity, Hkv, D] whose slot s holds random rows at positions 0..filled[s]−1, zeros after. */
export function historySlab(
  random: Random,
  g: AttentionGeometry,
  capacity: number,
  filled: readonly number[],
): Bf16Tensor {
  const rowWidth = g.kvHeads * g.headDim;
  const slab = zerosBf16(filled.length * capacity * rowWidth);
  for (let slot = 0; slot < filled.length; slot++) {
    const rows = randomBf16(random, filled[slot]! * rowWidth, 1);
    slab.bits.set(rows.bits, slot * capacity * rowWidth);
    slab.values.set(rows.values, slot * capacity * rowWidth);
  }
  return slab;
}

/** The rows each slot needs up to the call's last position in it (history plus the call's own rows). */
export function filledRows(rows: CallRows, slots: number): number[] {
  const filled = new Array<number>(slots).fill(0);
  for (let row = 0; row < rows.slots.length; row++) {
    const slot = rows.slots[row]!;
    filled[slot] = Math.max(filled[slot]!, rows.positions[row]! + 1);
  }
  return filled;
}

function roundAll(values: Float64Array): void {
  for (let index = 0; index < values.length; index++) values[index] = roundToBf16(values[index]!);
}

/** Normed and rotated heads of the given rows, rounded to bf16 after the norm and after the rotation. */
export function preparedHeads(
  g: AttentionGeometry,
  source: Float64Array,
  headStride: number,
  heads: number,
  weight: Float64Array,
  positions: Int32Array,
): Float64Array {
  const rows = positions.length;
  const out = new Float64Array(rows * heads * g.headDim);
  for (let head = 0; head < rows * heads; head++) {
    out.set(source.subarray(head * headStride, head * headStride + g.headDim), head * g.headDim);
  }
  rmsNormZeroCentred(out, weight, out, rows * heads, g.headDim, ATTENTION_EPS);
  roundAll(out);
  applyRope(out, rows, heads, g.headDim, g.rotaryDims, positions, ATTENTION_THETA, g.style);
  roundAll(out);
  return out;
}

/**
 * Attention of each row over its slot's keys 0..position: q [rows, Hq, D]; keys/values slabs [slots, capacity,
 * Hkv, D]; gate (gated) read at gate[row·gateRowStride + h·gateHeadStride + d]. The attended row is rounded to bf16
 * before the gate, as the kernel and the cpu bf16 path do.
 */
export function attentionReference(
  g: AttentionGeometry,
  q: Float64Array,
  keys: Float64Array,
  values: Float64Array,
  rows: CallRows,
  capacity: number,
  gate: Float64Array | undefined,
  gateRowStride: number,
  gateHeadStride: number,
): Float64Array {
  const { queryHeads, kvHeads, headDim } = g;
  const width = queryHeads * headDim;
  const slotWidth = capacity * kvHeads * headDim;
  const out = new Float64Array(rows.slots.length * width);
  const attended = new Float64Array(width);
  const scores = new Float64Array(capacity);
  const accumulator = new Float64Array(headDim);
  for (let row = 0; row < rows.slots.length; row++) {
    const slot = rows.slots[row]!;
    const slabKeys = keys.subarray(slot * slotWidth, (slot + 1) * slotWidth);
    const slabValues = values.subarray(slot * slotWidth, (slot + 1) * slotWidth);
    const query = q.subarray(row * width, (row + 1) * width);
    const scale = 1 / Math.sqrt(headDim);
    slotAttention(
      query,
      slabKeys,
      slabValues,
      capacity,
      Int32Array.of(0, rows.positions[row]!),
      attended,
      1,
      queryHeads,
      kvHeads,
      headDim,
      scale,
      scores,
      accumulator,
    );
    for (let head = 0; head < queryHeads; head++) {
      for (let dim = 0; dim < headDim; dim++) {
        const index = head * headDim + dim;
        let value = roundToBf16(attended[index]!);
        if (gate) value *= sigmoid(gate[row * gateRowStride + head * gateHeadStride + dim]!);
        out[row * width + index] = value;
      }
    }
  }
  return out;
}
