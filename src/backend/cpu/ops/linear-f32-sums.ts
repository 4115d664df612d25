// Linear layers whose sums are rounded to fp32 as a GPU's tensor-core GEMM rounds them: products in groups of 16 (one
// mma's k extent, summed exactly here), each group added to an fp32 chunk sum, 128-element chunks added to an fp32
// total in ascending order. A second, equally valid bf16 implementation beside the exact (double) sums of linear.ts
// and fp8.ts: the parity tests measure how far two correct bf16 implementations' picks disagree (their floor).
//   linearF32Sums:        W as fp32 values (or a tensor widened one row at a time)
//   linearFp8BlockF32Sums: e4m3 block-scaled, each block's exact sum scaled in fp32 and added to an fp32 total
import type { FloatArray } from '../../../numeric/float-array.ts';
import { type CpuTensor, type WideRow, widenToRow } from '../tensors.ts';
import { FP8_BLOCK } from './fp8.ts';

/** Products summed exactly per group (the k extent of one mma.sync m16n8k16). */
const MMA_GROUP = 16;
/** Elements per fp32 chunk sum before it joins the total. */
const CHUNK = 128;

const fround = Math.fround;

/** Σ_i x[xStart + i] · w[i] with the rounding points above. */
function chunkedDot(x: FloatArray, xStart: number, weightRow: FloatArray, inFeatures: number): number {
  let total = 0;
  for (let chunkStart = 0; chunkStart < inFeatures; chunkStart += CHUNK) {
    const chunkEnd = Math.min(inFeatures, chunkStart + CHUNK);
    let chunk = 0;
    for (let group = chunkStart; group < chunkEnd; group += MMA_GROUP) {
      const groupEnd = Math.min(chunkEnd, group + MMA_GROUP);
      let exact = 0;
      for (let i = group; i < groupEnd; i++) exact += x[xStart + i]! * weightRow[i]!;
      chunk = fround(chunk + fround(exact));
    }
    total = fround(total + chunk);
  }
  return total;
}

/** out[t, o] = dot(weight row o as fp32 values, t) for every output and row; rows widened one at a time if needed. */
function eachOutput(
  weight: FloatArray | CpuTensor,
  out: FloatArray,
  rows: number,
  inFeatures: number,
  outFeatures: number,
  row: WideRow,
  dot: (weightRow: FloatArray, t: number, o: number) => number,
): void {
  for (let o = 0; o < outFeatures; o++) {
    const weightRow =
      'dtype' in weight
        ? widenToRow(weight, o * inFeatures, inFeatures, row)
        : weight.subarray(o * inFeatures, (o + 1) * inFeatures);
    for (let t = 0; t < rows; t++) out[t * outFeatures + o] = dot(weightRow, t, o);
  }
}

export function linearF32Sums(
  x: FloatArray,
  weight: FloatArray | CpuTensor,
  out: FloatArray,
  rows: number,
  inFeatures: number,
  outFeatures: number,
  row: WideRow,
): void {
  eachOutput(weight, out, rows, inFeatures, outFeatures, row, (weightRow, t) =>
    chunkedDot(x, t * inFeatures, weightRow, inFeatures),
  );
}

export function linearFp8BlockF32Sums(
  quantized: FloatArray,
  activationScales: FloatArray,
  weight: FloatArray | CpuTensor,
  weightScales: FloatArray,
  out: FloatArray,
  rows: number,
  inFeatures: number,
  outFeatures: number,
  row: WideRow,
): void {
  const blocks = Math.ceil(inFeatures / FP8_BLOCK);
  eachOutput(weight, out, rows, inFeatures, outFeatures, row, (weightRow, t, o) => {
    const scaleRow = Math.floor(o / FP8_BLOCK) * blocks;
    let total = 0;
    for (let b = 0; b < blocks; b++) {
      let exact = 0;
      for (let i = b * FP8_BLOCK; i < Math.min(inFeatures, (b + 1) * FP8_BLOCK); i++) {
        exact += quantized[t * inFeatures + i]! * weightRow[i]!;
      }
      const scaled = fround(fround(fround(exact) * activationScales[t * blocks + b]!) * weightScales[scaleRow + b]!);
      total = fround(total + scaled);
    }
    return total;
  });
}
