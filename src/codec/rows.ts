// Row-major helpers for the codec's transformer and ConvNeXt parts: activations [T, C] (C contiguous), linear weights
// [out, in] (in contiguous, as PyTorch stores them). Dot products run in float64 in index order and round once.
import { rmsNorm as plainRmsNorm } from '../numeric/norms.ts';
import type { ScratchArena } from './scratch.ts';

/** [C, T] ↔ [T, C]. */
export function transpose(x: Float32Array, rows: number, columns: number, scratch: ScratchArena): Float32Array {
  const out = scratch.take(rows * columns);
  for (let row = 0; row < rows; row++) {
    for (let column = 0; column < columns; column++) out[column * rows + row] = x[row * columns + column]!;
  }
  return out;
}

/** y[t, o] = Σ_i x[t, i] · w[o, i] (+ b[o]). x [T, inputs] → [T, outputs]. */
export function linear(
  x: Float32Array,
  rows: number,
  inputs: number,
  outputs: number,
  weight: Float32Array,
  bias: Float32Array | undefined,
  scratch: ScratchArena,
): Float32Array {
  const out = scratch.take(rows * outputs);
  for (let row = 0; row < rows; row++) {
    const xBase = row * inputs;
    for (let output = 0; output < outputs; output++) {
      const wBase = output * inputs;
      let sum = bias === undefined ? 0 : bias[output]!;
      for (let input = 0; input < inputs; input++) sum += x[xBase + input]! * weight[wBase + input]!;
      out[row * outputs + output] = sum;
    }
  }
  return out;
}

/** RMSNorm: x · rsqrt(mean(x²) + eps) · w, per row (the cpu backend's plain norm, into scratch). */
export function rmsNorm(
  x: Float32Array,
  rows: number,
  width: number,
  weight: Float32Array,
  eps: number,
  scratch: ScratchArena,
): Float32Array {
  const out = scratch.take(rows * width);
  plainRmsNorm(x, weight, out, rows, width, eps);
  return out;
}

/** LayerNorm: (x − mean) / sqrt(var + eps) · w + b, per row (biased variance). */
export function layerNorm(
  x: Float32Array,
  rows: number,
  width: number,
  weight: Float32Array,
  bias: Float32Array,
  eps: number,
  scratch: ScratchArena,
): Float32Array {
  const out = scratch.take(rows * width);
  for (let row = 0; row < rows; row++) {
    const base = row * width;
    let sum = 0;
    for (let column = 0; column < width; column++) sum += x[base + column]!;
    const mean = sum / width;
    let variance = 0;
    for (let column = 0; column < width; column++) variance += (x[base + column]! - mean) ** 2;
    const scale = 1 / Math.sqrt(variance / width + eps);
    for (let column = 0; column < width; column++) {
      out[base + column] = (x[base + column]! - mean) * scale * weight[column]! + bias[column]!;
    }
  }
  return out;
}

/** erf(x) to double precision-level accuracy for |x| < 6 (Taylor series near 0, continued fraction outside). */
function erf(x: number): number {
  const magnitude = Math.abs(x);
  if (magnitude < 2.5) {
    // Σ (−1)^n x^(2n+1) / (n! (2n+1)), converges fast for |x| < 2.5.
    const square = x * x;
    let term = x;
    let sum = x;
    for (let n = 1; n < 60; n++) {
      term *= -square / n;
      const next = term / (2 * n + 1);
      sum += next;
      if (Math.abs(next) < 1e-17 * Math.abs(sum)) break;
    }
    return (2 / Math.sqrt(Math.PI)) * sum;
  }
  if (magnitude >= 6) return Math.sign(x);
  // erfc(z) = exp(−z²)/√π · 1/(z + 1/2/(z + 1/(z + 3/2/(z + …)))), evaluated bottom-up.
  let fraction = 0;
  for (let n = 60; n >= 1; n--) fraction = n / 2 / (magnitude + fraction);
  const complement = Math.exp(-magnitude * magnitude) / Math.sqrt(Math.PI) / (magnitude + fraction);
  return Math.sign(x) * (1 - complement);
}

/** Exact GELU: x · Φ(x), in place. */
export function geluInPlace(x: Float32Array): void {
  for (let index = 0; index < x.length; index++) {
    const value = x[index]!;
    x[index] = 0.5 * value * (1 + erf(value / Math.SQRT2));
  }
}
