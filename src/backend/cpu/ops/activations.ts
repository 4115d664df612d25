// Elementwise activations over flat arrays (any layout): SiLU, sigmoid, softplus and the SwiGLU product.
//   swiglu: out[i] = silu(gate[i]) · up[i],  silu(x) = x / (1 + e^−x)
import type { FloatArray } from '../../../numeric/float-array.ts';

export function silu(x: number): number {
  return x / (1 + Math.exp(-x));
}

export function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

/** softplus(x) = log(1 + e^x), with torch's linear branch above 20. */
export function softplus(x: number): number {
  return x > 20 ? x : Math.log1p(Math.exp(x));
}

export function swiglu(gate: FloatArray, up: FloatArray, out: FloatArray, count: number): void {
  for (let i = 0; i < count; i++) {
    const g = gate[i]!;
    out[i] = (g / (1 + Math.exp(-g))) * up[i]!;
  }
}
