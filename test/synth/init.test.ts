import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { tensorToFloat32 } from '../../src/checkpoint/tensor.ts';
import type { TensorSpec } from '../../src/model/weights.ts';
import { e4m3BitsToFloat32 } from '../../src/numeric/dtypes.ts';
import { initialFp8Weight, initialValues } from '../../src/synth/init.ts';
import { TensorStream } from '../../src/synth/random.ts';

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

describe('initialFp8Weight', () => {
  const expert = (shape: number[], writesResidual = false): TensorSpec => ({
    ...spec('expert', shape, writesResidual),
    dtype: 'F8_E4M3',
    accepts: ['F8_E4M3'],
  });

  test('one varied scale per 128×128 block, each = amax/448 of its block', () => {
    const rows = 300;
    const cols = 200;
    const { weight, scale } = initialFp8Weight(expert([rows, cols]), 3, 1);
    assert.deepEqual(weight.shape, [rows, cols]);
    assert.deepEqual(scale.shape, [3, 2]);
    const scales = tensorToFloat32(scale);
    const amax = new Array<number>(6).fill(0);
    for (let row = 0; row < rows; row++) {
      for (let col = 0; col < cols; col++) {
        const block = Math.floor(row / 128) * 2 + Math.floor(col / 128);
        const value = e4m3BitsToFloat32(weight.data[row * cols + col]!) * scales[block]!;
        amax[block] = Math.max(amax[block]!, Math.abs(value));
      }
    }
    for (let block = 0; block < 6; block++) assert.equal(amax[block], 448 * scales[block]!, `block ${block}`);
    assert.ok(new Set(scales).size === 6, 'blocks differ');
    const halfWidth = Math.sqrt(3) / Math.sqrt(cols);
    for (const value of scales) assert.ok(value >= (0.75 * halfWidth) / 448 && value <= (1.25 * halfWidth) / 448);
  });

  test('values have deviation about gain/sqrt(fan_in) and depend only on (seed, name)', () => {
    const shape = [256, 512];
    const { weight, scale } = initialFp8Weight(expert(shape, true), 9, 0.5);
    const scales = tensorToFloat32(scale);
    const values = new Float32Array(256 * 512);
    for (let index = 0; index < values.length; index++) {
      const block = Math.floor(index / 512 / 128) * 4 + Math.floor((index % 512) / 128);
      values[index] = e4m3BitsToFloat32(weight.data[index]!) * scales[block]!;
    }
    const { mean, deviation } = moments(values);
    const expected = 0.5 / Math.sqrt(512);
    assert.ok(Math.abs(mean) < expected / 20, `${mean}`);
    assert.ok(Math.abs(deviation / expected - 1) < 0.1, `${deviation} vs ${expected}`);
    assert.deepEqual(initialFp8Weight(expert(shape, true), 9, 0.5).weight.data, weight.data);
    assert.notDeepEqual(initialFp8Weight(expert(shape, true), 10, 0.5).weight.data, weight.data);
  });
});
