// The cpu backend's precision policies: bf16 mode stores only bf16 values where the GPU writes bf16; fp32 keeps fp32
// values; fp64 works in Float64Array. And FP8 block weights go through the activation quantisation.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CpuBackend } from '../../../src/backend/cpu/backend.ts';
import { roundToBf16, roundToE4m3 } from '../../../src/numeric/dtypes.ts';

function values(count: number, seed: number): Float32Array {
  let state = seed;
  return Float32Array.from({ length: count }, () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 31 - 1;
  });
}

const isBf16 = (value: number) => roundToBf16(value) === value;

test('bf16 mode rounds linear outputs and the residual add to bf16; fp32 mode does not', () => {
  const weight = values(8 * 16, 1).map(roundToBf16);
  const x = values(3 * 16, 2).map(roundToBf16);
  for (const precision of ['bf16', 'fp32'] as const) {
    const backend = new CpuBackend({ precision });
    const out = backend.allocate(3 * 8);
    backend.linear(x, { outFeatures: 8, inFeatures: 16, format: 'dense', values: weight }, out, 3);
    const residual = Float32Array.from(values(24, 3));
    backend.add(residual, out, 24);
    const allBf16 = [...out, ...residual].every(isBf16);
    assert.equal(allBf16, precision === 'bf16', precision);
  }
});

test('fp64 mode computes in Float64Array and matches a plain double dot product', () => {
  const backend = new CpuBackend({ precision: 'fp64' });
  const weight = backend.fromHost(values(4 * 5, 4));
  const x = backend.fromHost(values(5, 5));
  assert.ok(weight instanceof Float64Array);
  const out = backend.allocate(4);
  assert.ok(out instanceof Float64Array);
  backend.linear(x, { outFeatures: 4, inFeatures: 5, format: 'dense', values: weight }, out, 1);
  let expected = 0;
  for (let i = 0; i < 5; i++) expected += x[i]! * weight[10 + i]!;
  assert.equal(out[2], expected);
});

test('fp8 block weights quantise the activations: the result differs from the dense product by e4m3 rounding', () => {
  const backend = new CpuBackend({ precision: 'fp32' });
  const inFeatures = 256;
  const weightValues = values(2 * inFeatures, 6).map((value) => roundToE4m3(value * 400));
  const scales = Float32Array.of(0.001, 0.002);
  const x = values(inFeatures, 7);
  const out = backend.allocate(2);
  backend.linear(x, { outFeatures: 2, inFeatures, format: 'fp8-block', values: weightValues, scales }, out, 1);
  const dense = new Float32Array(2 * inFeatures);
  for (let i = 0; i < dense.length; i++) dense[i] = weightValues[i]! * scales[Math.floor((i % inFeatures) / 128)]!;
  const reference = backend.allocate(2);
  backend.linear(x, { outFeatures: 2, inFeatures, format: 'dense', values: dense }, reference, 1);
  for (let o = 0; o < 2; o++) {
    const error = Math.abs(out[o]! - reference[o]!);
    assert.ok(error > 0 && error < 0.05 * Math.abs(reference[o]!) + 0.05, `row ${o}: ${out[o]} vs ${reference[o]}`);
  }
});
