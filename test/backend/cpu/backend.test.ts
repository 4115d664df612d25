// The cpu backend's precision policies: bf16 mode stores only bf16 values where the GPU writes bf16; fp32 keeps fp32
// values; fp64 works in Float64Array. Weights stay in their stored dtype (bf16 bits, e4m3 bytes) and give the same
// products as their widened values; FP8 block weights go through the activation quantisation.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CpuBackend } from '../../../src/backend/cpu/backend.ts';
import { float32ToBf16Bits, float32ToE4m3Bits, roundToBf16, roundToE4m3 } from '../../../src/numeric/dtypes.ts';

function values(count: number, seed: number): Float32Array {
  let state = seed;
  return Float32Array.from({ length: count }, () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 31 - 1;
  });
}

const isBf16 = (value: number) => roundToBf16(value) === value;
const bf16Bits = (floats: Float32Array) => Uint16Array.from(floats, float32ToBf16Bits);

test('bf16 mode rounds linear outputs and the residual add to bf16; fp32 mode does not', () => {
  const weight = values(8 * 16, 1).map(roundToBf16);
  const x = values(3 * 16, 2).map(roundToBf16);
  for (const precision of ['bf16', 'fp32'] as const) {
    const backend = new CpuBackend({ precision });
    const out = backend.allocate('bf16', [3, 8]).data as Float32Array;
    backend.linear(x, backend.fromHost('f32', [8, 16], weight), out, 3);
    const residual = Float32Array.from(values(24, 3));
    backend.add(residual, out, 24);
    const allBf16 = [...out, ...residual].every(isBf16);
    assert.equal(allBf16, precision === 'bf16', precision);
  }
});

test('a bf16 weight kept as bits gives exactly the products of its widened values', () => {
  const backend = new CpuBackend({ precision: 'fp32' });
  const weight = values(6 * 20, 8).map(roundToBf16);
  const x = values(4 * 20, 9);
  const fromBits = backend.allocate('f32', [4, 6]).data;
  const fromFloats = backend.allocate('f32', [4, 6]).data;
  backend.linear(x, backend.fromHost('bf16', [6, 20], bf16Bits(weight)), fromBits, 4);
  backend.linear(x, backend.fromHost('f32', [6, 20], weight), fromFloats, 4);
  assert.deepEqual(fromBits, fromFloats);
});

test('fp64 mode computes in Float64Array and matches a plain double dot product', () => {
  const backend = new CpuBackend({ precision: 'fp64' });
  const weight = values(4 * 5, 4);
  const x = Float64Array.from(values(5, 5));
  const out = backend.allocate('f32', [4]).data;
  assert.ok(out instanceof Float64Array);
  backend.linear(x, backend.fromHost('f32', [4, 5], weight), out, 1);
  let expected = 0;
  for (let i = 0; i < 5; i++) expected += x[i]! * weight[10 + i]!;
  assert.equal(out[2], expected);
});

test('fp8 block weights quantise the activations: the result differs from the dense product by e4m3 rounding', () => {
  const backend = new CpuBackend({ precision: 'fp32' });
  const inFeatures = 256;
  const weightValues = values(2 * inFeatures, 6).map((value) => roundToE4m3(value * 400));
  const scales = backend.fromHost('f32', [1, 2], Float32Array.of(0.001, 0.002));
  const x = values(inFeatures, 7);
  const out = backend.allocate('f32', [2]).data;
  const bytes = Uint8Array.from(weightValues, float32ToE4m3Bits);
  backend.linear(x, { ...backend.fromHost('e4m3', [2, inFeatures], bytes), scales }, out, 1);
  const dense = new Float32Array(2 * inFeatures);
  for (let i = 0; i < dense.length; i++)
    dense[i] = weightValues[i]! * (scales.data as Float32Array)[Math.floor((i % inFeatures) / 128)]!;
  const reference = backend.allocate('f32', [2]).data;
  backend.linear(x, backend.fromHost('f32', [2, inFeatures], dense), reference, 1);
  for (let o = 0; o < 2; o++) {
    const error = Math.abs(out[o]! - reference[o]!);
    assert.ok(error > 0 && error < 0.05 * Math.abs(reference[o]!) + 0.05, `row ${o}: ${out[o]} vs ${reference[o]}`);
  }
});
