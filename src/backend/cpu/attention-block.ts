// Softmax attention on the cpu (backbone gated attention and the tower's plain attention).
//   x: [T, H] → q (per head [query | gate] when gated), k, v; zero-centred q/k norms per head; partial RoPE at
//   positions cache.length + t; K/V appended to the cache; causal GQA softmax(q·kᵀ/sqrt(hd)) · V; output × sigmoid(gate)
//   when gated; o_proj. The cache grows by doubling its row capacity.

import type { FloatArray } from '../../numeric/float-array.ts';
import { rmsNormZeroCentred } from '../../numeric/norms.ts';
import type { AttentionWeights, KeyValueCache } from '../types.ts';
import { runLinear } from './linear-layer.ts';
import { sigmoid } from './ops/activations.ts';
import { causalAttention } from './ops/attention.ts';
import { applyRope } from './ops/rope.ts';
import type { PrecisionPolicy } from './precision.ts';
import type { ScratchPool } from './scratch.ts';

function ensureCapacity(
  policy: PrecisionPolicy,
  cache: KeyValueCache<FloatArray>,
  rows: number,
  rowWidth: number,
): void {
  const needed = cache.length + rows;
  if (needed <= cache.capacity) return;
  const capacity = Math.max(needed, 2 * cache.capacity, 16);
  const keys = policy.allocate(capacity * rowWidth);
  const values = policy.allocate(capacity * rowWidth);
  keys.set(cache.keys.subarray(0, cache.length * rowWidth));
  values.set(cache.values.subarray(0, cache.length * rowWidth));
  cache.keys = keys;
  cache.values = values;
  cache.capacity = capacity;
}

export function runAttention(
  policy: PrecisionPolicy,
  scratch: ScratchPool,
  weights: AttentionWeights<FloatArray>,
  x: FloatArray,
  cache: KeyValueCache<FloatArray>,
  out: FloatArray,
  rows: number,
): void {
  const { heads, keyValueHeads, headDim, eps } = weights;
  const queryWidth = heads * headDim;
  const kvWidth = keyValueHeads * headDim;
  const projected = scratch.floatsFor('attention.projected', rows * weights.qProj.outFeatures);
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
  rmsNormZeroCentred(query, weights.qNorm, query, rows * heads, headDim, eps);
  rmsNormZeroCentred(key, weights.kNorm, key, rows * keyValueHeads, headDim, eps);
  policy.roundActivations(query, query.length);
  policy.roundActivations(key, key.length);
  const positions = scratch.integersFor('attention.positions', rows);
  for (let t = 0; t < rows; t++) positions[t] = cache.length + t;
  applyRope(query, rows, heads, headDim, weights.rotaryDim, positions, weights.ropeTheta, weights.ropeStyle);
  applyRope(key, rows, keyValueHeads, headDim, weights.rotaryDim, positions, weights.ropeTheta, weights.ropeStyle);
  policy.roundActivations(query, query.length);
  policy.roundActivations(key, key.length);
  ensureCapacity(policy, cache, rows, kvWidth);
  cache.keys.set(key, cache.length * kvWidth);
  cache.values.set(value, cache.length * kvWidth);
  const attended = scratch.floatsFor('attention.attended', rows * queryWidth);
  const scores = scratch.doublesFor('attention.scores', cache.length + rows);
  causalAttention(
    query,
    cache.keys,
    cache.values,
    attended,
    rows,
    cache.length,
    heads,
    keyValueHeads,
    headDim,
    1 / Math.sqrt(headDim),
    scores,
    policy.roundProbability,
  );
  cache.length += rows;
  policy.roundActivations(attended, attended.length);
  if (weights.outputGate) {
    for (let i = 0; i < attended.length; i++) attended[i] = attended[i]! * sigmoid(gate[i]!);
    policy.roundActivations(attended, attended.length);
  }
  runLinear(policy, scratch, attended, weights.oProj, out, rows);
}
