// The sampler's arithmetic (MODEL.md §4), one pure function per draw: the cpu reference of the sampler kernel.
//   p = softmax(logits / temperature) over all `count` candidates (max, exp and sum in ascending index, in double);
//   top-p over the whole set, then top-k: the candidates in descending p (ties to the lower index), cut at the
//   smallest prefix whose cumulative p reaches top-p, and at most top-k of them (0 = no limit);
//   an exponential race among the survivors: argmax p_i / E_i with E_i = −log U_i, U_i = (w + 0.5) / 2^32 and w
//   word (i mod 4) of Philox 4x32-10 at counter (floor(i / 4), frame, column, draw) under key (seed low, seed high);
//   the first survivor wins ties. Greedy is argmax of the logits (lowest index on ties).
import { philox4x32 } from '../../../numeric/philox.ts';

/** The working arrays of one draw: p and the candidate order [count], and Philox's four output words. */
export interface DrawScratch {
  readonly probabilities: Float64Array;
  readonly order: Int32Array;
  readonly words: Uint32Array;
}

export interface DrawKey {
  readonly seedLow: number;
  readonly seedHigh: number;
  readonly frame: number;
  readonly column: number;
  /** 0 for the normal draw, 1 for the RAS redraw. */
  readonly draw: number;
}

/** Index of the largest of values[offset .. offset + count) relative to offset (the lowest index among ties). */
export function argmax(values: ArrayLike<number>, count: number, offset = 0): number {
  let best = 0;
  for (let i = 1; i < count; i++) if (values[offset + i]! > values[offset + best]!) best = i;
  return best;
}

/** Writes the indices of the `limit` largest values into order[0..limit), descending, ties to the lower index. */
function selectLargest(values: Float64Array, count: number, limit: number, order: Int32Array): void {
  if (limit > 64) {
    // Insertion is quadratic in the limit: sort every index instead (the order is total, so any sort agrees).
    const all = order.subarray(0, count);
    for (let i = 0; i < count; i++) all[i] = i;
    all.sort((a, b) => values[b]! - values[a]! || a - b);
    return;
  }
  let filled = 0;
  for (let i = 0; i < count; i++) {
    const value = values[i]!;
    if (filled === limit && value <= values[order[limit - 1]!]!) continue;
    let position = filled === limit ? limit - 1 : filled++;
    while (position > 0 && values[order[position - 1]!]! < value) {
      order[position] = order[position - 1]!;
      position--;
    }
    order[position] = i;
  }
}

/** One draw from logits[offset .. offset + count): the winning candidate's index. */
export function drawCandidate(
  logits: ArrayLike<number>,
  offset: number,
  count: number,
  temperature: number,
  topP: number,
  topK: number,
  key: DrawKey,
  scratch: DrawScratch,
): number {
  const { probabilities, order, words } = scratch;
  let maximum = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < count; i++) maximum = Math.max(maximum, logits[offset + i]!);
  let sum = 0;
  for (let i = 0; i < count; i++) {
    const value = Math.exp((logits[offset + i]! - maximum) / temperature);
    probabilities[i] = value;
    sum += value;
  }
  for (let i = 0; i < count; i++) probabilities[i] = probabilities[i]! / sum;
  const limit = topK > 0 ? Math.min(topK, count) : count;
  selectLargest(probabilities, count, limit, order);
  let survivors = 0;
  let cumulative = 0;
  while (survivors < limit) {
    cumulative += probabilities[order[survivors]!]!;
    survivors++;
    if (cumulative >= topP) break;
  }
  let best = order[0]!;
  let bestScore = Number.NEGATIVE_INFINITY;
  for (let s = 0; s < survivors; s++) {
    const candidate = order[s]!;
    philox4x32(candidate >>> 2, key.frame, key.column, key.draw, key.seedLow, key.seedHigh, words);
    const uniform = (words[candidate & 3]! + 0.5) / 2 ** 32;
    const score = probabilities[candidate]! / -Math.log(uniform);
    if (score > bestScore) {
      bestScore = score;
      best = candidate;
    }
  }
  return best;
}
