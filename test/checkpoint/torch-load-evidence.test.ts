// What torch.load(weights_only=True) read from files our writer made (tools/oracle/torch_save.py and
// tools/oracle/torch_load_check.py, run with PyTorch 2.11): the evidence that PyTorch accepts our .pth files.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { tensorToFloat32 } from '../../src/checkpoint/tensor.ts';
import { TINY_CODEC_CONFIG } from '../../src/codec/config.ts';
import { synthesizeCodecWeights } from '../../src/codec/synth-weights.ts';
import { writerFixtureTensors } from './writer-fixture.ts';

const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`../fixtures/checkpoint/${name}`, import.meta.url), 'utf8'));
const hexOf = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const TORCH_DTYPES: Record<string, string> = { 'torch.float32': 'F32', 'torch.bfloat16': 'BF16', 'torch.int64': 'I64' };

describe('PyTorch loads what our .pth writer writes', () => {
  it('reads every tensor of the writer fixture with the bytes we wrote', () => {
    const seen = fixture('written-by-drama3.torch.json');
    assert.equal(seen.loaded, true, `torch.load refused our file: ${seen.error}`);
    const ours = writerFixtureTensors();
    assert.deepEqual(Object.keys(seen.tensors).sort(), [...ours.keys()].sort());
    for (const [name, tensor] of ours) {
      assert.equal(seen.tensors[name].dtype, tensor.dtype, name);
      assert.deepEqual(seen.tensors[name].shape, [...tensor.shape], name);
      assert.equal(seen.tensors[name].hex, hexOf(tensor.data), name);
    }
  });

  it('reads the tiny synthetic codec.pth (seed 0) with our names, dtypes, shapes and values', () => {
    const seen: Record<string, { dtype: string; shape: number[]; sum: number }> = fixture('synth-codec.torch.json');
    const ours = synthesizeCodecWeights(TINY_CODEC_CONFIG, 0);
    assert.deepEqual(Object.keys(seen).sort(), [...ours.keys()].sort());
    for (const [name, tensor] of ours) {
      assert.equal(TORCH_DTYPES[seen[name].dtype], tensor.dtype, name);
      assert.deepEqual(seen[name].shape, [...tensor.shape], name);
      let sum = 0;
      for (const value of tensorToFloat32(tensor)) sum += value;
      // Summation order differs from torch's; the values themselves are equal.
      assert.ok(Math.abs(sum - seen[name].sum) <= 1e-9 * (1 + Math.abs(sum)), `${name}: ${sum} vs ${seen[name].sum}`);
    }
  });
});
