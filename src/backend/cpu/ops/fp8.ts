// FP8 (e4m3) block-scaled linear as the release's experts run it (MODEL.md §2).
//   weight: [Out, In] e4m3 values (widened from bits one row at a time), scales: [ceil(Out/128), ceil(In/128)] fp32,
//           true weight = value × scale of its 128×128 block
//   activation quantisation (dynamic, per row per 128 columns): s = amax/448 (fp32), q = e4m3(x / s)
//   y[t, o] = Σ_blocks b  s_x[t, b] · s_w[o/128, b] · Σ_{i in b} q_x[t, i] · w[o, i]
// Inner block sums are exact in double precision (e4m3 × e4m3 products have few bits). A block whose amax is 0
// quantises to zeros (scale floored at 1e-10 so nothing divides by zero).
import { e4m3ValueTable, float32ToE4m3Bits } from '../../../numeric/dtypes.ts';
import type { FloatArray } from '../../../numeric/float-array.ts';
import { type CpuTensor, type WideRow, widenToRow } from '../tensors.ts';

export const FP8_BLOCK = 128;
const E4M3_MAX = 448;
const MINIMUM_AMAX = 1e-10;

/** Quantises x: [T, C] to e4m3 values q: [T, C] and scales: [T, ceil(C/128)] (fp32). */
export function quantizeActivationsE4m3(
  x: FloatArray,
  rows: number,
  cols: number,
  quantized: FloatArray,
  scales: FloatArray,
): void {
  const table = e4m3ValueTable();
  const blocks = Math.ceil(cols / FP8_BLOCK);
  for (let t = 0; t < rows; t++) {
    for (let b = 0; b < blocks; b++) {
      const start = t * cols + b * FP8_BLOCK;
      const end = t * cols + Math.min(cols, (b + 1) * FP8_BLOCK);
      let amax = 0;
      for (let i = start; i < end; i++) amax = Math.max(amax, Math.abs(x[i]!));
      const scale = Math.fround(Math.max(amax, MINIMUM_AMAX) / E4M3_MAX);
      scales[t * blocks + b] = scale;
      for (let i = start; i < end; i++) quantized[i] = table[float32ToE4m3Bits(Math.fround(x[i]! / scale))]!;
    }
  }
}

/** Σ over 128-column blocks b of s_x[t, b] · s_w[o/128, b] · Σ_{i in b} q_x[t, i] · w[i], blocks in ascending order. */
function blockDot(
  quantized: FloatArray,
  activationScales: FloatArray,
  weightRow: FloatArray,
  weightScales: FloatArray,
  t: number,
  o: number,
  inFeatures: number,
): number {
  const blocks = Math.ceil(inFeatures / FP8_BLOCK);
  const scaleRow = Math.floor(o / FP8_BLOCK) * blocks;
  let total = 0;
  for (let b = 0; b < blocks; b++) {
    const begin = b * FP8_BLOCK;
    const end = Math.min(inFeatures, begin + FP8_BLOCK);
    let partial = 0;
    for (let i = begin; i < end; i++) partial += quantized[t * inFeatures + i]! * weightRow[i]!;
    total += partial * activationScales[t * blocks + b]! * weightScales[scaleRow + b]!;
  }
  return total;
}

/** y = dequant(q_x) · dequant(W)ᵀ with both block scales applied per 128-column block; W as e4m3 values. */
export function linearFp8Block(
  quantized: FloatArray,
  activationScales: FloatArray,
  weight: FloatArray,
  weightScales: FloatArray,
  out: FloatArray,
  rows: number,
  inFeatures: number,
  outFeatures: number,
): void {
  for (let o = 0; o < outFeatures; o++) {
    const weightRow = weight.subarray(o * inFeatures, (o + 1) * inFeatures);
    for (let t = 0; t < rows; t++)
      out[t * outFeatures + o] = blockDot(quantized, activationScales, weightRow, weightScales, t, o, inFeatures);
  }
}

/** linearFp8Block over an e4m3 tensor (bits), one weight row widened at a time. */
export function linearFp8BlockTensor(
  quantized: FloatArray,
  activationScales: FloatArray,
  weight: CpuTensor,
  weightScales: FloatArray,
  out: FloatArray,
  rows: number,
  inFeatures: number,
  outFeatures: number,
  row: WideRow,
): void {
  for (let o = 0; o < outFeatures; o++) {
    const weightRow = widenToRow(weight, o * inFeatures, inFeatures, row);
    for (let t = 0; t < rows; t++)
      out[t * outFeatures + o] = blockDot(quantized, activationScales, weightRow, weightScales, t, o, inFeatures);
  }
}
