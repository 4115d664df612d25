// Softmax attention on the cpu (backbone gated attention and the tower's plain attention), over lane slots.
//   x: [T, H] → q (per head [query | gate] when gated), k, v; zero-centred q/k norms per head; partial RoPE at each
//   row's position (row table); K/V written to the row's slot at its position; causal GQA softmax(q·kᵀ/sqrt(hd)) · V
//   over that slot's rows 0..position; output × sigmoid(gate) when gated; o_proj.
import { DramaError } from '../../errors.ts';
import type { FloatArray } from '../../numeric/float-array.ts';
import { rmsNormZeroCentred } from '../../numeric/norms.ts';
import type { AttentionWeights, CallTables, KeyValueSlab } from '../types.ts';
import { runLinear } from './linear-layer.ts';
import { sigmoid } from './ops/activations.ts';
import { slotAttention } from './ops/attention.ts';
import { applyRope, ropeInverseFrequencies } from './ops/rope.ts';
import type { PrecisionPolicy } from './precision.ts';
import type { ScratchPool } from './scratch.ts';
import { type CpuBuffer, readFloats } from './tensors.ts';

/** Writes rows' K/V at (slot, position) of the slab; a position past the slot's capacity is refused. */
function writeKeyValues(
  slab: KeyValueSlab<CpuBuffer>,
  rowTable: Int32Array,
  key: FloatArray,
  value: FloatArray,
  rows: number,
  kvWidth: number,
): void {
  const [slots, capacity] = slab.keys.shape as [number, number];
  const keys = slab.keys.data as FloatArray;
  const values = slab.values.data as FloatArray;
  for (let t = 0; t < rows; t++) {
    const slot = rowTable[2 * t]!;
    const position = rowTable[2 * t + 1]!;
    if (slot < 0 || slot >= slots || position < 0 || position >= capacity) {
      throw new DramaError(
        'LANE_ROWS_EXCEEDED',
        `row at slot ${slot}, position ${position} is outside the planned ${slots} slots × ${capacity} rows`,
        { kind: 'internal' },
      );
    }
    const target = (slot * capacity + position) * kvWidth;
    for (let c = 0; c < kvWidth; c++) {
      keys[target + c] = key[t * kvWidth + c]!;
      values[target + c] = value[t * kvWidth + c]!;
    }
  }
}

export function runAttention(
  policy: PrecisionPolicy,
  scratch: ScratchPool,
  weights: AttentionWeights<CpuBuffer>,
  x: FloatArray,
  slab: KeyValueSlab<CpuBuffer>,
  tables: CallTables<CpuBuffer>,
  out: FloatArray,
  rows: number,
): void {
  const { heads, keyValueHeads, headDim, eps } = weights;
  const rowTable = tables.rows as Int32Array;
  const queryWidth = heads * headDim;
  const kvWidth = keyValueHeads * headDim;
  const projected = scratch.floatsFor('attention.projected', rows * weights.qProj.shape[0]!);
  runLinear(policy, scratch, x, weights.qProj, projected, rows);
  const query = scratch.floatsFor('attention.query', rows * queryWidth);
  const gate = scratch.floatsFor('attention.gate', rows * queryWidth);
  if (weights.outputGate) {
    // q_proj rows are per head [query hd | gate hd].
    for (let t = 0; t < rows; t++) {
      for (let h = 0; h < heads; h++) {
        const source = (t * heads + h) * 2 * headDim;
        const target = (t * heads + h) * headDim;
        query.set(projected.subarray(source, source + headDim), target);
        gate.set(projected.subarray(source + headDim, source + 2 * headDim), target);
      }
    }
  } else {
    query.set(projected);
  }
  const key = scratch.floatsFor('attention.key', rows * kvWidth);
  const value = scratch.floatsFor('attention.value', rows * kvWidth);
  runLinear(policy, scratch, x, weights.kProj, key, rows);
  runLinear(policy, scratch, x, weights.vProj, value, rows);
  const row = scratch.rowFor('attention.normRow', headDim);
  const qNorm = scratch.floatsFor('attention.qNorm', headDim);
  const kNorm = scratch.floatsFor('attention.kNorm', headDim);
  readFloats(weights.qNorm, 0, headDim, qNorm, 0, row);
  readFloats(weights.kNorm, 0, headDim, kNorm, 0, row);
  rmsNormZeroCentred(query, qNorm, query, rows * heads, headDim, eps);
  rmsNormZeroCentred(key, kNorm, key, rows * keyValueHeads, headDim, eps);
  policy.roundActivations(query, query.length);
  policy.roundActivations(key, key.length);
  const positions = scratch.integersFor('attention.positions', rows);
  for (let t = 0; t < rows; t++) positions[t] = rowTable[2 * t + 1]!;
  const half = weights.rotaryDim / 2;
  const inverseFrequencies = scratch.constantsFor(`rope:${weights.rotaryDim}:${weights.ropeTheta}`, () =>
    ropeInverseFrequencies(weights.rotaryDim, weights.ropeTheta),
  );
  const rope = {
    inverseFrequencies,
    cos: scratch.doublesFor('attention.cos', half),
    sin: scratch.doublesFor('attention.sin', half),
  };
  const { rotaryDim, ropeTheta, ropeStyle } = weights;
  applyRope(query, rows, heads, headDim, rotaryDim, positions, ropeTheta, ropeStyle, false, rope);
  applyRope(key, rows, keyValueHeads, headDim, rotaryDim, positions, ropeTheta, ropeStyle, false, rope);
  policy.roundActivations(query, query.length);
  policy.roundActivations(key, key.length);
  writeKeyValues(slab, rowTable, key, value, rows, kvWidth);
  const attended = scratch.floatsFor('attention.attended', rows * queryWidth);
  const capacity = slab.keys.shape[1]!;
  const scores = scratch.doublesFor('attention.scores', capacity);
  const accumulator = scratch.doublesFor('attention.accumulator', headDim);
  slotAttention(
    query,
    slab.keys.data as FloatArray,
    slab.values.data as FloatArray,
    capacity,
    rowTable,
    attended,
    rows,
    heads,
    keyValueHeads,
    headDim,
    1 / Math.sqrt(headDim),
    scores,
    accumulator,
  );
  policy.roundActivations(attended, attended.length);
  if (weights.outputGate) {
    for (let i = 0; i < attended.length; i++) attended[i] = attended[i]! * sigmoid(gate[i]!);
    policy.roundActivations(attended, attended.length);
  }
  runLinear(policy, scratch, attended, weights.oProj, out, rows);
}
