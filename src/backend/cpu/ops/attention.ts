// Causal grouped-query attention of T rows, each over its own lane slot's K/V rows.
//   q: [T, Hq, D]; keys, values: slabs [S, R, Hkv, D] (the call's rows already written at their positions);
//   rowTable: [T, 2] (slot, position); out: [T, Hq, D]. Query head h reads KV head floor(h / (Hq/Hkv)).
//   Row t attends to rows 0..position of its slot with softmax(q·kᵀ · scale): scores over keys in ascending position,
//   the max and the sum of exponentials in ascending position, V weighted in ascending position. Probabilities are
//   formed in double and weight V unrounded (as the kernel's online softmax weights it in fp32). A row's result
//   depends on its own slot's rows only, never on the other rows of the call.
import type { FloatArray } from '../../../numeric/float-array.ts';

export function slotAttention(
  q: FloatArray,
  keys: FloatArray,
  values: FloatArray,
  rowsPerSlot: number,
  rowTable: Int32Array,
  out: FloatArray,
  rows: number,
  queryHeads: number,
  keyValueHeads: number,
  headDim: number,
  scale: number,
  scores: Float64Array,
  accumulator: Float64Array,
): void {
  const group = queryHeads / keyValueHeads;
  const slotWidth = rowsPerSlot * keyValueHeads * headDim;
  for (let t = 0; t < rows; t++) {
    const slotStart = rowTable[2 * t]! * slotWidth;
    const visible = rowTable[2 * t + 1]! + 1;
    for (let h = 0; h < queryHeads; h++) {
      const kvHead = Math.floor(h / group);
      const qStart = (t * queryHeads + h) * headDim;
      let maximum = Number.NEGATIVE_INFINITY;
      for (let s = 0; s < visible; s++) {
        const kStart = slotStart + (s * keyValueHeads + kvHead) * headDim;
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
      for (let d = 0; d < headDim; d++) accumulator[d] = 0;
      for (let s = 0; s < visible; s++) {
        const probability = scores[s]! / sum;
        const vStart = slotStart + (s * keyValueHeads + kvHead) * headDim;
        for (let d = 0; d < headDim; d++) accumulator[d] += probability * values[vStart + d]!;
      }
      for (let d = 0; d < headDim; d++) out[qStart + d] = accumulator[d]!;
    }
  }
}
