// Per-lane sampling (MODEL.md §4): temperature, top-p over the whole candidate set then top-k, an exponential race
// argmax(p_i / E_i) with E_i = −log U_i and U_i from Philox 4x32-10 keyed by the seed and countered by (candidate,
// frame, column, draw); repetition-aware sampling (RAS) for the semantic column; greedy argmax for parity checks.
// Columns: 0 is `main` (the backbone's candidates: 4096 semantic ids then <|im_end|>), k = 1..9 is code[k].

import { philox4x32 } from './philox.ts';
import type { SamplingSettings } from './types.ts';

/** Frames of semantic history RAS looks at. */
const RAS_WINDOW = 16;
/** The settings a repeated semantic token is redrawn with (top-k stays the request's). */
const RAS_SETTINGS = { temperature: 1.0, topP: 0.9 } as const;

interface DrawSettings {
  readonly temperature: number;
  readonly topP: number;
  readonly topK: number;
}

const NORMAL_DRAW = 0;
const RAS_DRAW = 1;

export class FrameSampler {
  private readonly window = new Int32Array(RAS_WINDOW).fill(-1);
  private windowNext = 0;
  private readonly probabilities: Float64Array;
  private readonly order: Int32Array;
  private readonly words = new Uint32Array(4);
  private readonly seedLow: number;
  private readonly seedHigh: number;

  constructor(
    readonly settings: SamplingSettings,
    maxCandidates: number,
  ) {
    this.probabilities = new Float64Array(maxCandidates);
    this.order = new Int32Array(maxCandidates);
    this.seedLow = settings.seed >>> 0;
    this.seedHigh = Math.floor(settings.seed / 2 ** 32) >>> 0;
  }

  /**
   * Draws `main` for frame `frame` from the candidate logits; semantic candidates are indices below `semanticCount`.
   * A semantic token already in the last RAS_WINDOW frames is redrawn once with RAS_SETTINGS.
   */
  drawMain(logits: ArrayLike<number>, count: number, semanticCount: number, frame: number): number {
    if (this.settings.greedy) return argmax(logits, count);
    let chosen = this.draw(logits, count, this.settings, frame, 0, NORMAL_DRAW);
    if (chosen < semanticCount && this.window.includes(chosen)) {
      chosen = this.draw(logits, count, { ...RAS_SETTINGS, topK: this.settings.topK }, frame, 0, RAS_DRAW);
    }
    if (chosen < semanticCount) {
      this.window[this.windowNext] = chosen;
      this.windowNext = (this.windowNext + 1) % RAS_WINDOW;
    }
    return chosen;
  }

  /** Draws code[column] (column 1..9) of frame `frame` from its codebook logits. */
  drawCode(logits: ArrayLike<number>, count: number, frame: number, column: number): number {
    if (this.settings.greedy) return argmax(logits, count);
    return this.draw(logits, count, this.settings, frame, column, NORMAL_DRAW);
  }

  private draw(
    logits: ArrayLike<number>,
    count: number,
    settings: DrawSettings,
    frame: number,
    column: number,
    draw: number,
  ): number {
    const { probabilities, order } = this;
    let maximum = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < count; i++) maximum = Math.max(maximum, logits[i]!);
    let sum = 0;
    for (let i = 0; i < count; i++) {
      const value = Math.exp((logits[i]! - maximum) / settings.temperature);
      probabilities[i] = value;
      sum += value;
    }
    for (let i = 0; i < count; i++) probabilities[i] = probabilities[i]! / sum;
    const limit = settings.topK > 0 ? Math.min(settings.topK, count) : count;
    selectLargest(probabilities, count, limit, order);
    // Top-p over the whole set: the smallest prefix reaching topP; top-k then keeps at most `limit` of it.
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
      philox4x32(candidate >>> 2, frame, column, draw, this.seedLow, this.seedHigh, this.words);
      const uniform = (this.words[candidate & 3]! + 0.5) / 2 ** 32;
      const score = probabilities[candidate]! / -Math.log(uniform);
      if (score > bestScore) {
        bestScore = score;
        best = candidate;
      }
    }
    return best;
  }
}

/** Index of the largest value (the lowest index among ties). */
export function argmax(values: ArrayLike<number>, count: number): number {
  let best = 0;
  for (let i = 1; i < count; i++) if (values[i]! > values[best]!) best = i;
  return best;
}

/** Writes the indices of the `limit` largest values into order[0..limit), descending, ties to the lower index. */
function selectLargest(values: Float64Array, count: number, limit: number, order: Int32Array): void {
  if (limit > 64) {
    // Insertion is quadratic in the limit: sort every index instead.
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
