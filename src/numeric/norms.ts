// Row-wise RMS norms. x: [T, C], C contiguous; weight: [C]; out: [T, C] (may alias x).
//   zero-centred: y = x · rsqrt(mean(x²) + eps) · (1 + w)       (Qwen3.5 layer, final, q/k and tower norms)
//   plain:        y = x · rsqrt(mean(x²) + eps) · w
//   gated:        y = x · rsqrt(mean(x²) + eps) · w · SiLU(z)    (Gated DeltaNet output norm; z: [T, C])
// The mean of squares is summed in double precision. The three loops stay separate so each inner loop is branch-free.
import type { FloatArray } from './float-array.ts';

function inverseRms(x: FloatArray, start: number, cols: number, eps: number): number {
  let sum = 0;
  for (let c = 0; c < cols; c++) {
    const value = x[start + c]!;
    sum += value * value;
  }
  return 1 / Math.sqrt(sum / cols + eps);
}

export function rmsNormZeroCentred(
  x: FloatArray,
  weight: FloatArray,
  out: FloatArray,
  rows: number,
  cols: number,
  eps: number,
): void {
  for (let t = 0; t < rows; t++) {
    const start = t * cols;
    const scale = inverseRms(x, start, cols, eps);
    for (let c = 0; c < cols; c++) out[start + c] = x[start + c]! * scale * (1 + weight[c]!);
  }
}

export function rmsNorm(
  x: FloatArray,
  weight: FloatArray,
  out: FloatArray,
  rows: number,
  cols: number,
  eps: number,
): void {
  for (let t = 0; t < rows; t++) {
    const start = t * cols;
    const scale = inverseRms(x, start, cols, eps);
    for (let c = 0; c < cols; c++) out[start + c] = x[start + c]! * scale * weight[c]!;
  }
}

export function gatedRmsNorm(
  x: FloatArray,
  z: FloatArray,
  weight: FloatArray,
  out: FloatArray,
  rows: number,
  cols: number,
  eps: number,
): void {
  for (let t = 0; t < rows; t++) {
    const start = t * cols;
    const scale = inverseRms(x, start, cols, eps);
    for (let c = 0; c < cols; c++) {
      const gate = z[start + c]!;
      out[start + c] = x[start + c]! * scale * weight[c]! * (gate / (1 + Math.exp(-gate)));
    }
  }
}
