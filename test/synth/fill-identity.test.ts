// The chunked fills (fillBits, initialTensor's bf16 path) give the bytes the per-element definitions give: the whole
// tiny checkpoint hashes to the digests of the element-at-a-time generator, and odd sizes across a chunk boundary
// match the definitions element by element.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { float32ToTensor } from '../../src/checkpoint/tensor.ts';
import type { TensorSpec } from '../../src/model/weights.ts';
import { initialTensor, initialValues } from '../../src/synth/init.ts';
import { planCheckpoint, type SynthExperts, tokenizerFacts } from '../../src/synth/plan.ts';
import { TensorStream } from '../../src/synth/random.ts';
import { synthesizeTensors } from '../../src/synth/synthesize.ts';
import { buildSyntheticTokenizerFiles } from '../../src/text/vocabulary.ts';

/** SHA-256 over (name, dtype, bytes) of every tensor for seed 11, from the element-at-a-time generator. */
const REFERENCE_DIGESTS: Readonly<Record<SynthExperts, string>> = {
  fp8: '1919ca120d12609782c3521b52c56696f5c7da2cb59e39a51a2b350fee95c51f',
  bf16: 'e4e16027995d27a939c154bb5cce2c2e523becf5fff16eab5f118e4503413880',
};

function spec(role: TensorSpec['role'], dtype: TensorSpec['dtype'], shape: number[]): TensorSpec {
  return {
    name: `test.${role}.${shape.join('x')}`,
    role,
    part: 'backbone',
    dtype,
    accepts: [dtype],
    shape,
    writesResidual: false,
  };
}

describe('chunked fills', () => {
  test('the tiny checkpoint hashes to the reference digests (fp8 and bf16 experts)', () => {
    const facts = tokenizerFacts(buildSyntheticTokenizerFiles().tokenizerJson);
    for (const experts of ['fp8', 'bf16'] as const) {
      const hash = createHash('sha256');
      for (const [name, tensor] of synthesizeTensors(planCheckpoint('tiny', experts, facts), 11)) {
        hash.update(name);
        hash.update(tensor.dtype);
        hash.update(tensor.data);
      }
      assert.equal(hash.digest('hex'), REFERENCE_DIGESTS[experts], experts);
    }
  });

  test('fillBits and fillUniform match bits() and uniform() past a chunk boundary', () => {
    const stream = new TensorStream(3, 'model.layers.0.mlp.gate.weight');
    const bits = stream.fillBits(new Uint32Array(4099), 5);
    const uniform = stream.fillUniform(9001, -2, 3);
    for (let index = 0; index < bits.length; index++) assert.equal(bits[index], stream.bits(5 + index), `${index}`);
    for (let index = 0; index < uniform.length; index++) {
      assert.equal(uniform[index], Math.fround(-2 + 5 * stream.uniform(index)), `${index}`);
    }
  });

  test('initialTensor in bf16 is float32ToTensor of initialValues, odd size across chunks', () => {
    const linear = spec('linear', 'BF16', [3, 4099]);
    const expected = float32ToTensor(initialValues(linear, 4, 0.5), 'BF16', linear.shape);
    assert.deepEqual(initialTensor(linear, 4, 0.5).data, expected.data);
  });
});
