// MoE router: softmax over all E router logits, top-k, renormalise the k weights to sum 1.
// logits: [T, E]; indices: [T, k] int32; weights: [T, k]. The softmax is taken in fp32 as torch does (each probability
// rounded to fp32 before the top-k) so that ties resolve alike; ties go to the lower expert index; the output order
// is by descending probability.
import type { FloatArray } from '../../../numeric/float-array.ts';

export function routerTopK(
  logits: FloatArray,
  rows: number,
  experts: number,
  topK: number,
  indices: Int32Array,
  weights: FloatArray,
  probabilities: Float64Array = new Float64Array(experts),
): void {
  for (let t = 0; t < rows; t++) {
    const start = t * experts;
    let maximum = Number.NEGATIVE_INFINITY;
    for (let e = 0; e < experts; e++) maximum = Math.max(maximum, logits[start + e]!);
    let sum = 0;
    for (let e = 0; e < experts; e++) {
      const value = Math.exp(logits[start + e]! - maximum);
      probabilities[e] = value;
      sum += value;
    }
    for (let e = 0; e < experts; e++) probabilities[e] = Math.fround(probabilities[e]! / sum);
    let chosenSum = 0;
    for (let k = 0; k < topK; k++) {
      let best = -1;
      for (let e = 0; e < experts; e++) {
        if (probabilities[e]! < 0) continue;
        if (best < 0 || probabilities[e]! > probabilities[best]!) best = e;
      }
      indices[t * topK + k] = best;
      weights[t * topK + k] = probabilities[best]!;
      chosenSum += probabilities[best]!;
      probabilities[best] = -1;
    }
    for (let k = 0; k < topK; k++) weights[t * topK + k] = weights[t * topK + k]! / chosenSum;
  }
}
