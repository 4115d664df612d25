// Partial rotary position embedding, in place. x: [T, H, D] (D = head dim, contiguous per head); positions: [T].
// Only the first rotaryDim dims of each head rotate; the rest pass through. inv_freq_i = theta^(−2i/rotaryDim).
//   neox (rotate-half):   pairs (i, i + rotaryDim/2)     — the Qwen3.5 backbone
//   interleaved (GPT-J):  pairs (2i, 2i + 1)              — the codebook tower
// Angles are formed as torch forms them, in fp32 (fround(inv_freq · position)) unless exactAngles is set; cos/sin
// and the rotation itself run in double precision.
import type { FloatArray } from '../../../numeric/float-array.ts';

export type RopeStyle = 'neox' | 'interleaved';

/** inv_freq as torch computes it in fp32: 1 / theta^(2i / rotaryDim). */
export function ropeInverseFrequencies(rotaryDim: number, theta: number, exactAngles = false): Float64Array {
  const half = rotaryDim / 2;
  const result = new Float64Array(half);
  for (let i = 0; i < half; i++) {
    if (exactAngles) result[i] = 1 / theta ** ((2 * i) / rotaryDim);
    else result[i] = Math.fround(1 / Math.fround(theta ** Math.fround((2 * i) / rotaryDim)));
  }
  return result;
}

/** Preallocated inverse frequencies (ropeInverseFrequencies of the same arguments) and cos/sin rows of rotaryDim/2. */
export interface RopeScratch {
  readonly inverseFrequencies: Float64Array;
  readonly cos: Float64Array;
  readonly sin: Float64Array;
}

export function applyRope(
  x: FloatArray,
  rows: number,
  heads: number,
  headDim: number,
  rotaryDim: number,
  positions: ArrayLike<number>,
  theta: number,
  style: RopeStyle,
  exactAngles = false,
  scratch?: RopeScratch,
): void {
  const half = rotaryDim / 2;
  const inverseFrequencies = scratch?.inverseFrequencies ?? ropeInverseFrequencies(rotaryDim, theta, exactAngles);
  const cos = scratch?.cos ?? new Float64Array(half);
  const sin = scratch?.sin ?? new Float64Array(half);
  for (let t = 0; t < rows; t++) {
    const position = positions[t]!;
    for (let i = 0; i < half; i++) {
      const angle = exactAngles ? position * inverseFrequencies[i]! : Math.fround(position * inverseFrequencies[i]!);
      cos[i] = Math.cos(angle);
      sin[i] = Math.sin(angle);
    }
    for (let h = 0; h < heads; h++) {
      const base = (t * heads + h) * headDim;
      for (let i = 0; i < half; i++) {
        const first = style === 'neox' ? base + i : base + 2 * i;
        const second = style === 'neox' ? base + i + half : base + 2 * i + 1;
        const a = x[first]!;
        const b = x[second]!;
        x[first] = a * cos[i]! - b * sin[i]!;
        x[second] = b * cos[i]! + a * sin[i]!;
      }
    }
  }
}
