// The cpu reference ops against hand-computed values and against each other (chunked vs recurrent forms).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { slotAttention } from '../../../src/backend/cpu/ops/attention.ts';
import { causalConv1dSilu } from '../../../src/backend/cpu/ops/conv.ts';
import { gatedDeltaChunked, gatedDeltaRecurrent } from '../../../src/backend/cpu/ops/delta-rule.ts';
import { codebookRow, frameRow } from '../../../src/backend/cpu/ops/embedding.ts';
import { linearFp8Block, quantizeActivationsE4m3 } from '../../../src/backend/cpu/ops/fp8.ts';
import { linear, linearBf16 } from '../../../src/backend/cpu/ops/linear.ts';
import { applyRope } from '../../../src/backend/cpu/ops/rope.ts';
import { routerTopK } from '../../../src/backend/cpu/ops/router.ts';
import { float32ToBf16Bits, roundToBf16, roundToE4m3 } from '../../../src/numeric/dtypes.ts';
import { gatedRmsNorm, rmsNorm, rmsNormZeroCentred } from '../../../src/numeric/norms.ts';

function randomArray(count: number, seed: number, scale = 1): Float64Array {
  let state = seed >>> 0 || 1;
  const out = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out[i] = (state / 2 ** 32 - 0.5) * 2 * scale;
  }
  return out;
}

function maxAbsDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  return worst;
}

test('norms: zero-centred uses (1 + w), plain uses w, gated multiplies SiLU(z)', () => {
  const x = Float64Array.of(3, 4);
  const weight = Float64Array.of(0.5, -0.5);
  const out = new Float64Array(2);
  const inverse = 1 / Math.sqrt(12.5 + 1e-6);
  rmsNormZeroCentred(x, weight, out, 1, 2, 1e-6);
  assert.ok(maxAbsDifference(out, [3 * inverse * 1.5, 4 * inverse * 0.5]) < 1e-15);
  rmsNorm(x, weight, out, 1, 2, 1e-6);
  assert.ok(maxAbsDifference(out, [3 * inverse * 0.5, 4 * inverse * -0.5]) < 1e-15);
  const z = Float64Array.of(1, -2);
  gatedRmsNorm(x, z, weight, out, 1, 2, 1e-6);
  const silu = (v: number) => v / (1 + Math.exp(-v));
  assert.ok(maxAbsDifference(out, [3 * inverse * 0.5 * silu(1), 4 * inverse * -0.5 * silu(-2)]) < 1e-15);
});

test('frame row: (text + codebook row) / sqrt(2), with the stacked codebook row rule', () => {
  assert.equal(codebookRow(0, 7), 7);
  assert.equal(codebookRow(1, 7), 4096 + 7);
  assert.equal(codebookRow(9, 1023), 4096 + 8 * 1024 + 1023);
  const text = Float64Array.of(1, 2, 3, 4);
  const codes = Float64Array.of(10, 20, 30, 40, 50, 60);
  const out = new Float64Array(2);
  frameRow(text, codes, 1, 2, out, 0, 2);
  assert.ok(maxAbsDifference(out, [(3 + 50) / Math.SQRT2, (4 + 60) / Math.SQRT2]) < 1e-14);
});

test('rope: neox pairs (i, i + r/2), interleaved pairs (2i, 2i + 1), untouched tail', () => {
  const base = Float64Array.of(1, 2, 3, 4, 5, 6);
  const neox = base.slice();
  applyRope(neox, 1, 1, 6, 4, [3], 100, 'neox', true);
  const inv1 = 1 / 100 ** 0.5;
  const expectedNeox = [
    1 * Math.cos(3) - 3 * Math.sin(3),
    2 * Math.cos(3 * inv1) - 4 * Math.sin(3 * inv1),
    3 * Math.cos(3) + 1 * Math.sin(3),
    4 * Math.cos(3 * inv1) + 2 * Math.sin(3 * inv1),
    5,
    6,
  ];
  assert.ok(maxAbsDifference(neox, expectedNeox) < 1e-14);
  const interleaved = base.slice();
  applyRope(interleaved, 1, 1, 6, 4, [3], 100, 'interleaved', true);
  const expectedInterleaved = [
    1 * Math.cos(3) - 2 * Math.sin(3),
    2 * Math.cos(3) + 1 * Math.sin(3),
    3 * Math.cos(3 * inv1) - 4 * Math.sin(3 * inv1),
    4 * Math.cos(3 * inv1) + 3 * Math.sin(3 * inv1),
    5,
    6,
  ];
  assert.ok(maxAbsDifference(interleaved, expectedInterleaved) < 1e-14);
});

test('router: softmax top-k renormalised, ties to the lower expert index', () => {
  const logits = Float64Array.of(1, 3, 3, 0);
  const indices = new Int32Array(2);
  const weights = new Float64Array(2);
  routerTopK(logits, 1, 4, 2, indices, weights);
  assert.deepEqual([...indices], [1, 2]);
  assert.ok(maxAbsDifference(weights, [0.5, 0.5]) < 1e-7);
  routerTopK(Float64Array.of(0, Math.log(3), Math.log(2)), 1, 3, 2, indices, weights);
  assert.deepEqual([...indices], [1, 2]);
  assert.ok(maxAbsDifference(weights, [0.6, 0.4]) < 1e-7);
});

test('linear over bf16 bits equals linear over the widened weights', () => {
  const weight = randomArray(5 * 7, 3).map(roundToBf16);
  const bits = new Uint16Array(weight.length);
  for (let i = 0; i < weight.length; i++) bits[i] = float32ToBf16Bits(weight[i]!);
  const x = randomArray(3 * 7, 4);
  const a = new Float64Array(15);
  const b = new Float64Array(15);
  linear(x, weight, a, 3, 7, 5);
  linearBf16(x, bits, b, 3, 7, 5);
  assert.ok(maxAbsDifference(a, b) < 1e-13);
  let expected = 0;
  for (let i = 0; i < 7; i++) expected += x[7 + i]! * weight[2 * 7 + i]!;
  assert.ok(Math.abs(a[5 + 2]! - expected) < 1e-13);
});

test('fp8 block linear: quantised activations and 128×128 weight blocks', () => {
  const rows = 2;
  const inFeatures = 200;
  const outFeatures = 130;
  const x = randomArray(rows * inFeatures, 5, 3);
  const weightValues = randomArray(outFeatures * inFeatures, 6, 400).map(roundToE4m3);
  const weightScales = Float64Array.of(0.01, 0.02, 0.03, 0.04);
  const quantized = new Float64Array(rows * inFeatures);
  const scales = new Float64Array(rows * 2);
  quantizeActivationsE4m3(x, rows, inFeatures, quantized, scales);
  const out = new Float64Array(rows * outFeatures);
  linearFp8Block(quantized, scales, weightValues, weightScales, out, rows, inFeatures, outFeatures);
  // Independent: dequantise both sides to plain arrays, then a plain dot product.
  const xDequant = new Float64Array(rows * inFeatures);
  for (let t = 0; t < rows; t++) {
    for (let i = 0; i < inFeatures; i++)
      xDequant[t * inFeatures + i] = quantized[t * inFeatures + i]! * scales[t * 2 + Math.floor(i / 128)]!;
  }
  const wDequant = new Float64Array(outFeatures * inFeatures);
  for (let o = 0; o < outFeatures; o++) {
    for (let i = 0; i < inFeatures; i++) {
      wDequant[o * inFeatures + i] =
        weightValues[o * inFeatures + i]! * weightScales[Math.floor(o / 128) * 2 + Math.floor(i / 128)]!;
    }
  }
  const expected = new Float64Array(rows * outFeatures);
  linear(xDequant, wDequant, expected, rows, inFeatures, outFeatures);
  assert.ok(maxAbsDifference(out, expected) < 1e-9);
  // The quantisation error itself is bounded by e4m3's 3-bit mantissa.
  assert.ok(maxAbsDifference(xDequant, x) <= 3 * 2 ** -4 + 1e-12);
  assert.ok(Math.abs(scales[0]! - Math.fround(Math.max(...x.subarray(0, 128).map(Math.abs)) / 448)) < 1e-12);
});

test('causal conv: any split of the rows gives the same outputs and state', () => {
  const channels = 3;
  const kernel = 4;
  const rows = 9;
  const x = randomArray(rows * channels, 7);
  const weight = randomArray(channels * kernel, 8);
  const whole = new Float64Array(rows * channels);
  const state = new Float64Array((kernel - 1) * channels);
  causalConv1dSilu(x, weight, state, whole, rows, channels, kernel);
  const pieces = new Float64Array(rows * channels);
  const pieceState = new Float64Array((kernel - 1) * channels);
  for (const [from, to] of [
    [0, 1],
    [1, 3],
    [3, 9],
  ] as const) {
    causalConv1dSilu(
      x.subarray(from * channels, to * channels),
      weight,
      pieceState,
      pieces.subarray(from * channels),
      to - from,
      channels,
      kernel,
    );
  }
  assert.deepEqual(pieces, whole);
  assert.deepEqual(pieceState, state);
  // Row 1, channel 0 by hand: two zero-padded taps, then x[0], x[1].
  const sum = weight[2]! * x[0]! + weight[3]! * x[channels]!;
  assert.ok(Math.abs(whole[channels]! - sum / (1 + Math.exp(-sum))) < 1e-15);
});

test('delta rule: the chunked form equals the recurrent form, across calls', () => {
  const shape = { keyHeads: 2, valueHeads: 4, keyDim: 8, valueDim: 6 };
  const rows = 150;
  const q = randomArray(rows * 2 * 8, 11);
  const k = randomArray(rows * 2 * 8, 12);
  const v = randomArray(rows * 4 * 6, 13);
  const g = randomArray(rows * 4, 14).map((value) => -Math.abs(value));
  const beta = randomArray(rows * 4, 15).map((value) => Math.abs(value));
  const stateSize = 4 * 8 * 6;
  const recurrentState = new Float64Array(stateSize);
  const recurrentOut = new Float64Array(rows * 24);
  gatedDeltaRecurrent(q, k, v, g, beta, recurrentState, recurrentOut, rows, shape);
  const chunkedState = new Float64Array(stateSize);
  const chunkedOut = new Float64Array(rows * 24);
  gatedDeltaChunked(
    q.subarray(0, 100 * 16),
    k.subarray(0, 100 * 16),
    v.subarray(0, 100 * 24),
    g.subarray(0, 400),
    beta.subarray(0, 400),
    chunkedState,
    chunkedOut,
    100,
    shape,
  );
  gatedDeltaChunked(
    q.subarray(100 * 16),
    k.subarray(100 * 16),
    v.subarray(100 * 24),
    g.subarray(400),
    beta.subarray(400),
    chunkedState,
    chunkedOut.subarray(100 * 24),
    50,
    shape,
  );
  assert.ok(maxAbsDifference(chunkedOut, recurrentOut) < 1e-12);
  assert.ok(maxAbsDifference(chunkedState, recurrentState) < 1e-12);
  assert.ok(maxAbsDifference(recurrentOut, new Float64Array(rows * 24)) > 0.01);
});

test('attention: one row over its own slot by hand, GQA head mapping', () => {
  const q = Float64Array.of(1, 0, 0, 1);
  // Slabs [2 slots, 2 rows, 1 head, 2]: slot 0 holds other values that the row at slot 1 must not see.
  const keys = Float64Array.of(9, 9, 9, 9, 1, 0, 0, 1);
  const values = Float64Array.of(-1, -1, -1, -1, 2, 3, 5, 7);
  const out = new Float64Array(4);
  const rowTable = Int32Array.of(1, 1);
  slotAttention(q, keys, values, 2, rowTable, out, 1, 2, 1, 2, 1, new Float64Array(2), new Float64Array(2));
  const e = Math.E;
  const p0 = e / (e + 1);
  assert.ok(
    maxAbsDifference(out, [
      p0 * 2 + (1 - p0) * 5,
      p0 * 3 + (1 - p0) * 7,
      (1 - p0) * 2 + p0 * 5,
      (1 - p0) * 3 + p0 * 7,
    ]) < 1e-14,
  );
});
