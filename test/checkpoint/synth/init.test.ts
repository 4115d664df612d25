import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { e4m3BitsToFloat32 } from '../../../src/checkpoint/dtypes.ts';
import { initialValues, quantizeFp8Blocks } from '../../../src/checkpoint/synth/init.ts';
import { TensorStream } from '../../../src/checkpoint/synth/random.ts';
import { tensorToFloat32 } from '../../../src/checkpoint/tensor.ts';
import type { TensorSpec } from '../../../src/model/weights.ts';

function spec(role: TensorSpec['role'], shape: number[], writesResidual = false): TensorSpec {
  return { name: `test.${role}`, role, part: 'backbone', dtype: 'BF16', accepts: ['BF16'], shape, writesResidual };
}

function moments(values: Float32Array): { mean: number; deviation: number } {
  let sum = 0;
  for (const value of values) sum += value;
  const mean = sum / values.length;
  let squares = 0;
  for (const value of values) squares += (value - mean) ** 2;
  return { mean, deviation: Math.sqrt(squares / values.length) };
}

describe('TensorStream', () => {
  test('depends only on (seed, name, index)', () => {
    const a = new TensorStream(7, 'model.norm.weight').fillUniform(1000, 0, 1);
    assert.deepEqual(new TensorStream(7, 'model.norm.weight').fillUniform(1000, 0, 1), a);
    assert.notDeepEqual(new TensorStream(8, 'model.norm.weight').fillUniform(1000, 0, 1), a);
    assert.notDeepEqual(new TensorStream(7, 'model.norm.bias').fillUniform(1000, 0, 1), a);
    // Element i is the same whether or not earlier elements were drawn.
    assert.equal(
      new TensorStream(7, 'model.norm.weight').uniform(999),
      new TensorStream(7, 'model.norm.weight').uniform(999),
    );
    // Seeds above 2^32 are not folded onto small ones.
    assert.notDeepEqual(new TensorStream(2 ** 32 + 7, 'model.norm.weight').fillUniform(1000, 0, 1), a);
  });

  test('is uniform: mean 1/2, variance 1/12, every decile filled', () => {
    const values = new TensorStream(1, 'x').fillUniform(200_000, 0, 1);
    const { mean, deviation } = moments(values);
    assert.ok(Math.abs(mean - 0.5) < 0.005, `${mean}`);
    assert.ok(Math.abs(deviation ** 2 - 1 / 12) < 0.002, `${deviation}`);
    const deciles = new Array<number>(10).fill(0);
    for (const value of values) deciles[Math.floor(value * 10)]! += 1;
    for (const count of deciles) assert.ok(Math.abs(count - 20_000) < 800, `${deciles}`);
  });
});

describe('initialValues', () => {
  test('linear weights have deviation gain/sqrt(fan_in)', () => {
    const plain = moments(initialValues(spec('linear', [256, 400]), 1, 0.25));
    assert.ok(Math.abs(plain.deviation - 1 / 20) < 0.001, `${plain.deviation}`);
    assert.ok(Math.abs(plain.mean) < 0.001);
    const residual = moments(initialValues(spec('linear', [256, 400], true), 1, 0.25));
    assert.ok(Math.abs(residual.deviation - 0.25 / 20) < 0.0003, `${residual.deviation}`);
  });

  test('norms sit near 0 (zero-centred) or near 1 (GDN output norm); decays are log U(1, 16)', () => {
    const norm = moments(initialValues(spec('norm', [4096]), 1, 1));
    assert.ok(Math.abs(norm.mean) < 0.005 && norm.deviation < 0.05);
    const gated = moments(initialValues(spec('gated_norm', [4096]), 1, 1));
    assert.ok(Math.abs(gated.mean - 1) < 0.005);
    const decays = initialValues(spec('decay_log', [4096]), 1, 1);
    assert.ok(decays.every((value) => value >= 0 && value <= Math.log(16) + 1e-6));
    assert.ok(Math.max(...decays) > Math.log(15) && Math.min(...decays) < Math.log(1.1));
  });
});

describe('quantizeFp8Blocks', () => {
  test('one scale per 128×128 block = amax/448, values within e4m3 rounding', () => {
    const rows = 130;
    const cols = 200;
    const values = new TensorStream(3, 'w').fillUniform(rows * cols, -1, 1);
    values[5] = 3; // block (0, 0) gets a larger amax
    for (let row = 128; row < rows; row++) for (let col = 128; col < cols; col++) values[row * cols + col] = 0;
    const { weight, scale } = quantizeFp8Blocks(values, rows, cols);
    assert.deepEqual(scale.shape, [2, 2]);
    assert.deepEqual(weight.shape, [rows, cols]);
    const scales = tensorToFloat32(scale);
    const amax = [0, 0, 0, 0];
    for (let row = 0; row < rows; row++) {
      for (let col = 0; col < cols; col++) {
        const block = (row >= 128 ? 2 : 0) + (col >= 128 ? 1 : 0);
        amax[block] = Math.max(amax[block]!, Math.abs(values[row * cols + col]!));
      }
    }
    assert.equal(scales[0], Math.fround(3 / 448));
    assert.equal(scales[1], Math.fround(amax[1]! / 448));
    assert.equal(scales[3], 1, 'an all-zero block keeps scale 1');
    assert.equal(e4m3BitsToFloat32(weight.data[5]!), 448);
    for (let index = 0; index < values.length; index++) {
      const row = Math.floor(index / cols);
      const col = index % cols;
      const block = (row >= 128 ? 2 : 0) + (col >= 128 ? 1 : 0);
      const restored = e4m3BitsToFloat32(weight.data[index]!) * scales[block]!;
      const error = Math.abs(restored - values[index]!);
      // e4m3 keeps 3 mantissa bits (relative 2^-4); below 2^-6·scale the subnormal step 2^-9·scale rules.
      assert.ok(error <= Math.abs(values[index]!) / 16 + scales[block]! * 2 ** -10 + 1e-12, `${index}: ${error}`);
    }
  });
});
