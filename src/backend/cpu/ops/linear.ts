// Linear layers y = x · Wᵀ. x: [T, In] row-major; W: [Out, In] row-major (the torch nn.Linear layout); y: [T, Out].
//   linear:      W as fp32/fp64 values
//   linearTensor: W in its stored dtype (bf16, f16, f32, e4m3 values), one row widened at a time (what the model uses)
//   linearBf16:  W as raw bf16 bits (Uint16Array), the oracle form; accumulation in fp64, or in fp32 (each partial
//                sum rounded to fp32, in order) to show what a sequential fp32 accumulator gives
// Dot products run in double precision unless stated, in a fixed order per output element (four partial sums over
// i mod 4): an output element never depends on how many rows the call has.

import type { FloatArray } from '../../../numeric/float-array.ts';
import { type CpuTensor, type WideRow, widenToRow } from '../tensors.ts';

/** Σ_i x[xStart + i] · w[wStart + i] in four interleaved partial sums (i mod 4), combined (s0 + s1) + (s2 + s3). */
function dot(x: FloatArray, xStart: number, weight: FloatArray, wStart: number, inFeatures: number): number {
  const tail = inFeatures - (inFeatures % 4);
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let i = 0;
  for (; i < tail; i += 4) {
    s0 += x[xStart + i]! * weight[wStart + i]!;
    s1 += x[xStart + i + 1]! * weight[wStart + i + 1]!;
    s2 += x[xStart + i + 2]! * weight[wStart + i + 2]!;
    s3 += x[xStart + i + 3]! * weight[wStart + i + 3]!;
  }
  for (; i < inFeatures; i++) s0 += x[xStart + i]! * weight[wStart + i]!;
  return s0 + s1 + (s2 + s3);
}

/** dot() for two x rows at once (each weight element loaded once): the same sums, in the same order, per row. */
function dotPair(
  x: FloatArray,
  first: number,
  second: number,
  weight: FloatArray,
  wStart: number,
  inFeatures: number,
  out: FloatArray,
  outFirst: number,
  outSecond: number,
): void {
  const tail = inFeatures - (inFeatures % 4);
  let a0 = 0;
  let a1 = 0;
  let a2 = 0;
  let a3 = 0;
  let b0 = 0;
  let b1 = 0;
  let b2 = 0;
  let b3 = 0;
  let i = 0;
  for (; i < tail; i += 4) {
    const w0 = weight[wStart + i]!;
    const w1 = weight[wStart + i + 1]!;
    const w2 = weight[wStart + i + 2]!;
    const w3 = weight[wStart + i + 3]!;
    a0 += x[first + i]! * w0;
    a1 += x[first + i + 1]! * w1;
    a2 += x[first + i + 2]! * w2;
    a3 += x[first + i + 3]! * w3;
    b0 += x[second + i]! * w0;
    b1 += x[second + i + 1]! * w1;
    b2 += x[second + i + 2]! * w2;
    b3 += x[second + i + 3]! * w3;
  }
  for (; i < inFeatures; i++) {
    a0 += x[first + i]! * weight[wStart + i]!;
    b0 += x[second + i]! * weight[wStart + i]!;
  }
  out[outFirst] = a0 + a1 + (a2 + a3);
  out[outSecond] = b0 + b1 + (b2 + b3);
}

/** Every output row of one weight row: rows in pairs through dotPair, an odd last row through dot. */
function weightRowProducts(
  x: FloatArray,
  weight: FloatArray,
  wStart: number,
  out: FloatArray,
  o: number,
  rows: number,
  inFeatures: number,
  outFeatures: number,
): void {
  let t = 0;
  for (; t + 1 < rows; t += 2) {
    const first = t * inFeatures;
    const second = first + inFeatures;
    dotPair(x, first, second, weight, wStart, inFeatures, out, t * outFeatures + o, (t + 1) * outFeatures + o);
  }
  if (t < rows) out[t * outFeatures + o] = dot(x, t * inFeatures, weight, wStart, inFeatures);
}

export function linear(
  x: FloatArray,
  weight: FloatArray,
  out: FloatArray,
  rows: number,
  inFeatures: number,
  outFeatures: number,
): void {
  for (let o = 0; o < outFeatures; o++)
    weightRowProducts(x, weight, o * inFeatures, out, o, rows, inFeatures, outFeatures);
}

/** linear() over a weight tensor in any float dtype: each weight row is widened once per call, exactly, then dotted. */
export function linearTensor(
  x: FloatArray,
  weight: CpuTensor,
  out: FloatArray,
  rows: number,
  inFeatures: number,
  outFeatures: number,
  row: WideRow,
): void {
  for (let o = 0; o < outFeatures; o++) {
    const widened = widenToRow(weight, o * inFeatures, inFeatures, row);
    weightRowProducts(x, widened, 0, out, o, rows, inFeatures, outFeatures);
  }
}

const bitsScratch = new Uint32Array(1);
const floatScratch = new Float32Array(bitsScratch.buffer);

export function linearBf16(
  x: FloatArray,
  weightBits: Uint16Array,
  out: FloatArray,
  rows: number,
  inFeatures: number,
  outFeatures: number,
  accumulate: 'fp32' | 'fp64' = 'fp64',
): void {
  const widened = new Float64Array(inFeatures);
  for (let o = 0; o < outFeatures; o++) {
    for (let i = 0; i < inFeatures; i++) {
      bitsScratch[0] = weightBits[o * inFeatures + i]! << 16;
      widened[i] = floatScratch[0]!;
    }
    for (let t = 0; t < rows; t++) {
      const xStart = t * inFeatures;
      let sum = 0;
      if (accumulate === 'fp64') {
        for (let i = 0; i < inFeatures; i++) sum += x[xStart + i]! * widened[i]!;
      } else {
        for (let i = 0; i < inFeatures; i++) sum = Math.fround(sum + Math.fround(x[xStart + i]! * widened[i]!));
      }
      out[t * outFeatures + o] = sum;
    }
  }
}
