// Causal grouped-query attention of T new rows over a KV cache.
//   q: [T, Hq, D]; keys, values: [S, Hkv, D] (cache rows 0..S−1, the new rows already appended at
//   firstPosition..firstPosition+T−1); out: [T, Hq, D]. Query head h reads KV head floor(h / (Hq/Hkv)).
//   Row t attends to cache rows 0..firstPosition+t with softmax(q·kᵀ · scale); probabilities are formed in double and,
//   when roundProbability is given, rounded by it before weighting V (bf16 for the bf16 model, as eager torch does).
import type { FloatArray } from '../../../numeric/float-array.ts';

export function causalAttention(
  q: FloatArray,
  keys: FloatArray,
  values: FloatArray,
  out: FloatArray,
  rows: number,
  firstPosition: number,
  queryHeads: number,
  keyValueHeads: number,
  headDim: number,
  scale: number,
  scores: Float64Array,
  roundProbability?: (p: number) => number,
): void {
  const group = queryHeads / keyValueHeads;
  const accumulator = new Float64Array(headDim);
  for (let t = 0; t < rows; t++) {
    const visible = firstPosition + t + 1;
    for (let h = 0; h < queryHeads; h++) {
      const kvHead = Math.floor(h / group);
      const qStart = (t * queryHeads + h) * headDim;
      let maximum = Number.NEGATIVE_INFINITY;
      for (let s = 0; s < visible; s++) {
        const kStart = (s * keyValueHeads + kvHead) * headDim;
        let dot = 0;
        for (let d = 0; d < headDim; d++) dot += q[qStart + d]! * keys[kStart + d]!;
        dot *= scale;
        scores[s] = dot;
        if (dot > maximum) maximum = dot;
      }
      let sum = 0;
      for (let s = 0; s < visible; s++) {
        const value = Math.exp(scores[s]! - maximum);
        scores[s] = value;
        sum += value;
      }
      accumulator.fill(0);
      for (let s = 0; s < visible; s++) {
        const probability = roundProbability ? roundProbability(scores[s]! / sum) : scores[s]! / sum;
        const vStart = (s * keyValueHeads + kvHead) * headDim;
        for (let d = 0; d < headDim; d++) accumulator[d] += probability * values[vStart + d]!;
      }
      for (let d = 0; d < headDim; d++) out[qStart + d] = accumulator[d]!;
    }
  }
}
