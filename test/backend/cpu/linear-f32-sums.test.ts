// The cpu's fp32-sums linear layers (ops/linear-f32-sums.ts): the rounding points by hand, per-row results that do
// not depend on the call's rows, and the backend option that selects them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CpuBackend } from '../../../src/backend/cpu/backend.ts';
import { linearFp8Block, quantizeActivationsE4m3 } from '../../../src/backend/cpu/ops/fp8.ts';
import { linear } from '../../../src/backend/cpu/ops/linear.ts';
import { linearF32Sums, linearFp8BlockF32Sums } from '../../../src/backend/cpu/ops/linear-f32-sums.ts';
import { wideRow } from '../../../src/backend/cpu/tensors.ts';
import { roundToE4m3 } from '../../../src/numeric/dtypes.ts';

const ULP_OF_ONE = 2 ** -23;

function seeded(count: number, seed: number): Float32Array {
  let state = seed >>> 0;
  return Float32Array.from({ length: count }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return Math.fround((state / 2 ** 32 - 0.5) * 2);
  });
}

/** 1 at element 0 and half an ulp of 1 (2^-12 · 2^-12) at each of `halves`: the exact and the fp32-sums results. */
function onePlusHalves(inFeatures: number, halves: readonly number[]): [number, number] {
  const x = new Float32Array(inFeatures);
  const weight = new Float32Array(inFeatures);
  x[0] = weight[0] = 1;
  for (const index of halves) x[index] = weight[index] = 2 ** -12;
  const exact = new Float32Array(1);
  const rounded = new Float32Array(1);
  linear(x, weight, exact, 1, inFeatures, 1);
  linearF32Sums(x, weight, rounded, 1, inFeatures, 1, wideRow(inFeatures));
  return [exact[0]!, rounded[0]!];
}

test('f32 sums: each mma group of 16 rounded to fp32 as it joins its chunk (by hand)', () => {
  // Half an ulp in group 0 beside the 1, half alone in group 1: exactly 1 + 1 ulp; each half a tie to even: 1.
  assert.deepEqual(onePlusHalves(32, [1, 16]), [1 + ULP_OF_ONE, 1]);
});

test('f32 sums: each 128-element chunk rounded to fp32 as it joins the total (by hand)', () => {
  // Half an ulp alone in chunks 1 and 2: exactly 1 + 1 ulp; each half a tie to even as it joins the total: 1.
  assert.deepEqual(onePlusHalves(384, [128, 256]), [1 + ULP_OF_ONE, 1]);
});

test('f32 sums: a row gives the same bits alone and in a call of 7 rows; within fp32 error of the exact sums', () => {
  const inFeatures = 384;
  const outFeatures = 5;
  const rows = 7;
  const x = seeded(rows * inFeatures, 3);
  const weight = seeded(outFeatures * inFeatures, 4);
  const together = new Float32Array(rows * outFeatures);
  linearF32Sums(x, weight, together, rows, inFeatures, outFeatures, wideRow(inFeatures));
  const exact = new Float32Array(rows * outFeatures);
  linear(x, weight, exact, rows, inFeatures, outFeatures);
  let differing = 0;
  for (let t = 0; t < rows; t++) {
    const alone = new Float32Array(outFeatures);
    linearF32Sums(x.subarray(t * inFeatures), weight, alone, 1, inFeatures, outFeatures, wideRow(inFeatures));
    assert.deepEqual(alone, together.subarray(t * outFeatures, (t + 1) * outFeatures));
  }
  for (let i = 0; i < exact.length; i++) {
    assert.ok(Math.abs(together[i]! - exact[i]!) <= 1e-5, `element ${i}: ${together[i]} vs exact ${exact[i]}`);
    if (together[i] !== exact[i]) differing++;
  }
  assert.ok(differing > 0, 'fp32 sums equal the exact sums everywhere: the rounding points are not applied');
});

test('f32 sums, e4m3 blocks: each block scaled in fp32, the same picks of blocks as the exact form', () => {
  const inFeatures = 512;
  const outFeatures = 130;
  const rows = 3;
  const x = seeded(rows * inFeatures, 5);
  const weight = seeded(outFeatures * inFeatures, 6).map(roundToE4m3);
  const weightScales = seeded(2 * 4, 7).map((value) => Math.fround(Math.abs(value) / 64 + 1 / 256));
  const quantized = new Float32Array(rows * inFeatures);
  const scales = new Float32Array(rows * 4);
  quantizeActivationsE4m3(x, rows, inFeatures, quantized, scales);
  const exact = new Float32Array(rows * outFeatures);
  const rounded = new Float32Array(rows * outFeatures);
  linearFp8Block(quantized, scales, weight, weightScales, exact, rows, inFeatures, outFeatures);
  linearFp8BlockF32Sums(quantized, scales, weight, weightScales, rounded, rows, inFeatures, outFeatures, wideRow(0));
  let differing = 0;
  for (let i = 0; i < exact.length; i++) {
    assert.ok(Math.abs(rounded[i]! - exact[i]!) <= 1e-6 * (1 + Math.abs(exact[i]!)), `element ${i}`);
    if (rounded[i] !== exact[i]) differing++;
  }
  assert.ok(differing > 0, 'fp32 block sums equal the exact sums everywhere');
});

test('the backend option: fp32 sums in bf16 and fp32 modes; the fp64 oracle refuses them by name', () => {
  assert.equal(new CpuBackend({ precision: 'bf16', linearSums: 'f32' }).policy.linearSums, 'f32');
  assert.equal(new CpuBackend({ precision: 'bf16' }).policy.linearSums, 'exact');
  assert.throws(() => new CpuBackend({ precision: 'fp64', linearSums: 'f32' }), { code: 'PRECISION_INVALID' });
});
