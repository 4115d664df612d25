// The sampler's arithmetic, once, as the reference of kernels/cuda/sampler.cu (MODEL.md §4). One draw from a row of
// candidate logits, with every step in an order a GPU block can reproduce bit for bit:
//   x_i = logit_i (NaN counts as −Inf); m = max x_i; e_i = exp((x_i − m) / T) with the portable exp
//   Z = Σ e_i in a fixed order: SUM_LANES strided partial sums (lane j adds i = j, j + SUM_LANES, ... ascending),
//       then a halving tree (for s = SUM_LANES/2 .. 1: partial[j] += partial[j + s])
//   p_i = e_i / Z; order = the top-k largest p (descending, ties to the lower index; all when k = 0)
//   survivors = the shortest prefix of `order` whose running sum (added in order) reaches top-p
//   pick = argmax over survivors of p / −log(U), U = (philox word + 0.5) / 2^32 keyed by (seed; candidate >> 2,
//          frame, column, draw), the earlier survivor winning a tie
// Temperature and top-p are float32 values (the device's lane table holds float32): callers pass them through
// Math.fround. Greedy is argmax x (ties to the lower index). A row without a finite maximum: −Inf everywhere picks
// 0; a +Inf logit picks the first +Inf.
import { philox4x32 } from '../../../numeric/philox.ts';
import { portableExp, portableLog } from '../../../numeric/portable-math.ts';

/** Partial sums of the normaliser: the sampler kernel's block size. */
export const SUM_LANES = 256;
/** Above this top-k the candidates are ranked by a full sort. */
const INSERTION_LIMIT = 64;

export interface DrawSettings {
  /** float32-representable, > 0. */
  readonly temperature: number;
  /** float32-representable, in (0, 1]. */
  readonly topP: number;
  /** 0 = no top-k. */
  readonly topK: number;
}

/** What a draw's random numbers are keyed by. */
export interface DrawKey {
  readonly seedLow: number;
  readonly seedHigh: number;
  readonly frame: number;
  readonly column: number;
  /** 0 for the normal draw, 1 for the RAS redraw. */
  readonly draw: number;
}

/** The working arrays of one draw: p and the candidate order [count], the normaliser's partials, Philox's words. */
export interface DrawScratch {
  readonly probabilities: Float64Array;
  readonly order: Int32Array;
  readonly partials: Float64Array;
  readonly words: Uint32Array;
}

/** Fresh working arrays for draws of up to `capacity` candidates. */
export function drawScratch(capacity: number): DrawScratch {
  return {
    probabilities: new Float64Array(capacity),
    order: new Int32Array(capacity),
    partials: new Float64Array(SUM_LANES),
    words: new Uint32Array(4),
  };
}

function logitAt(logits: ArrayLike<number>, index: number): number {
  const value = logits[index]!;
  return Number.isNaN(value) ? Number.NEGATIVE_INFINITY : value;
}

/** argmax of the logits row [offset, offset + count), NaN as −Inf, ties to the lower index. */
export function argmaxLogits(logits: ArrayLike<number>, offset: number, count: number): number {
  let best = 0;
  let bestValue = logitAt(logits, offset);
  for (let i = 1; i < count; i++) {
    const value = logitAt(logits, offset + i);
    if (value > bestValue) {
      best = i;
      bestValue = value;
    }
  }
  return best;
}

/** Σ values[0..count) in the kernel's order (strided lanes, then a halving tree). */
export function fixedOrderSum(values: Float64Array, count: number, partials: Float64Array): number {
  partials.fill(0);
  for (let lane = 0; lane < SUM_LANES; lane++) {
    let sum = 0;
    for (let i = lane; i < count; i += SUM_LANES) sum += values[i]!;
    partials[lane] = sum;
  }
  for (let stride = SUM_LANES / 2; stride >= 1; stride /= 2) {
    for (let lane = 0; lane < stride; lane++) partials[lane] = partials[lane]! + partials[lane + stride]!;
  }
  return partials[0]!;
}

/** Writes the indices of the `limit` largest values into order[0..limit), descending, ties to the lower index. */
function selectLargest(values: Float64Array, count: number, limit: number, order: Int32Array): void {
  if (limit > INSERTION_LIMIT) {
    const indices = Array.from({ length: count }, (_, index) => index);
    indices.sort((a, b) => values[b]! - values[a]! || a - b);
    for (let i = 0; i < limit; i++) order[i] = indices[i]!;
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

/** One draw from logits [offset, offset + count) (see the header); returns the candidate index. */
export function drawFromLogits(
  logits: ArrayLike<number>,
  offset: number,
  count: number,
  settings: DrawSettings,
  key: DrawKey,
  scratch: DrawScratch,
): number {
  const { probabilities, order, words } = scratch;
  let maximum = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < count; i++) maximum = Math.max(maximum, logitAt(logits, offset + i));
  if (maximum === Number.NEGATIVE_INFINITY) return 0;
  if (maximum === Number.POSITIVE_INFINITY) return argmaxLogits(logits, offset, count);
  for (let i = 0; i < count; i++) {
    probabilities[i] = portableExp((logitAt(logits, offset + i) - maximum) / settings.temperature);
  }
  const total = fixedOrderSum(probabilities, count, scratch.partials);
  for (let i = 0; i < count; i++) probabilities[i] = probabilities[i]! / total;
  const limit = settings.topK > 0 ? Math.min(settings.topK, count) : count;
  selectLargest(probabilities, count, limit, order);
  let survivors = 0;
  let cumulative = 0;
  while (survivors < limit) {
    cumulative += probabilities[order[survivors]!]!;
    survivors++;
    if (cumulative >= settings.topP) break;
  }
  let best = order[0]!;
  let bestScore = Number.NEGATIVE_INFINITY;
  for (let s = 0; s < survivors; s++) {
    const candidate = order[s]!;
    philox4x32(candidate >>> 2, key.frame, key.column, key.draw, key.seedLow, key.seedHigh, words);
    const uniform = (words[candidate & 3]! + 0.5) / 2 ** 32;
    const score = probabilities[candidate]! / -portableLog(uniform);
    if (score > bestScore) {
      bestScore = score;
      best = candidate;
    }
  }
  return best;
}

/** Frames of semantic history RAS looks at; frame f's semantic code sits at entry f mod RAS_WINDOW. */
export const RAS_WINDOW = 16;
/** What a repeated semantic code is redrawn with (top-k stays the lane's). */
export const RAS_SETTINGS = { temperature: 1, topP: Math.fround(0.9) } as const;

/** One lane's sampling parameters as the device's lane table holds them. */
export interface LaneSampling {
  readonly settings: DrawSettings;
  readonly greedy: boolean;
  readonly seedLow: number;
  readonly seedHigh: number;
}

/** A request's settings in the lane table's precision: float32 temperature and top-p, the seed as two words. */
export function laneSampling(sampling: {
  readonly seed: number;
  readonly temperature: number;
  readonly topP: number;
  readonly topK: number;
  readonly greedy: boolean;
}): LaneSampling {
  return {
    settings: {
      temperature: Math.fround(sampling.temperature),
      topP: Math.fround(sampling.topP),
      topK: sampling.topK,
    },
    greedy: sampling.greedy,
    seedLow: sampling.seed >>> 0,
    seedHigh: Math.floor(sampling.seed / 2 ** 32) >>> 0,
  };
}

/**
 * Draws `main` (column 0) of frame `frame`; candidates below `semanticCount` are semantic codes. A semantic code
 * already in the lane's RAS window is redrawn once with RAS_SETTINGS (draw 1); a semantic pick enters the window.
 */
export function drawMain(
  logits: ArrayLike<number>,
  offset: number,
  count: number,
  semanticCount: number,
  lane: LaneSampling,
  frame: number,
  window: Int32Array,
  windowOffset: number,
  scratch: DrawScratch,
): number {
  if (lane.greedy) return argmaxLogits(logits, offset, count);
  const key = { seedLow: lane.seedLow, seedHigh: lane.seedHigh, frame, column: 0, draw: 0 };
  let chosen = drawFromLogits(logits, offset, count, lane.settings, key, scratch);
  if (chosen < semanticCount && window.subarray(windowOffset, windowOffset + RAS_WINDOW).includes(chosen)) {
    const settings = { ...RAS_SETTINGS, topK: lane.settings.topK };
    chosen = drawFromLogits(logits, offset, count, settings, { ...key, draw: 1 }, scratch);
  }
  if (chosen < semanticCount) window[windowOffset + (frame % RAS_WINDOW)] = chosen;
  return chosen;
}

/** Draws code[column] (column 1..9) of frame `frame` from its codebook logits. */
export function drawCode(
  logits: ArrayLike<number>,
  offset: number,
  count: number,
  lane: LaneSampling,
  frame: number,
  column: number,
  scratch: DrawScratch,
): number {
  if (lane.greedy) return argmaxLogits(logits, offset, count);
  const key = { seedLow: lane.seedLow, seedHigh: lane.seedHigh, frame, column, draw: 0 };
  return drawFromLogits(logits, offset, count, lane.settings, key, scratch);
}
