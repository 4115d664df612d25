// The `cuda` geometry of the transformers parity fixture (tools/oracle/qwen35_moe_geometries.json), served by the cuda
// backend without a GPU: a checkpoint of that geometry (zeros, under our weight map's names) beside a config.json of
// transformers' keys is loaded by the parity test's own loader onto the cuda backend over the host imitation of the
// driver (support/fake-cuda.ts, launches recorded, never run) and run in one prefill and in chunks of 1, 7 and 64.
// No launcher may refuse it, and the decode and prefill attention, the Gated DeltaNet and the bf16 experts must all
// launch: the device call that makes the fixture (bench/gpu-transformers-parity.sh) is then not spent finding a
// geometry the kernels cannot serve.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CudaBackend } from '../../src/backend/cuda/backend.ts';
import { writeSafetensors } from '../../src/checkpoint/safetensors-writer.ts';
import { type HostTensor, tensorByteLength } from '../../src/checkpoint/tensor.ts';
import { backboneTensors } from '../../src/model/weights.ts';
import { FakeDriver, fakeContext, observeArguments } from '../backend/support/fake-cuda.ts';
import { fixtureTextConfig, loadBackboneOn, runInChunks } from '../model/transformers-fixture.ts';

const GEOMETRIES = new URL('../../tools/oracle/qwen35_moe_geometries.json', import.meta.url);
const ROWS = 150;

/** A fixture folder of `geometry`: transformers' config keys and a checkpoint of zeros, bf16 experts. */
async function zeroFixture(geometry: Record<string, unknown>): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'drama3-fixture-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'checkpoint'));
  writeFileSync(join(dir, 'checkpoint/config.json'), JSON.stringify(geometry));
  const specs = backboneTensors(fixtureTextConfig(dir), { prefix: 'model.', experts: 'bf16' });
  const tensors = specs.map((spec): [string, HostTensor] => [
    spec.name,
    { dtype: spec.dtype, shape: spec.shape, data: new Uint8Array(tensorByteLength(spec.dtype, spec.shape)) },
  ]);
  await writeSafetensors(join(dir, 'checkpoint/model.safetensors'), tensors);
  return dir;
}

test("the transformers fixture's cuda geometry loads and runs on the cuda backend in every chunking", async () => {
  const geometry = JSON.parse(readFileSync(GEOMETRIES, 'utf8')).cuda;
  const dir = await zeroFixture(geometry);
  const driver = new FakeDriver();
  after(observeArguments(driver));
  const backbone = await loadBackboneOn(new CudaBackend(fakeContext(driver)), dir);
  const inputIds = Int32Array.from({ length: ROWS }, (_, t) => (t * 37) % geometry.vocab_size);
  for (const chunk of [ROWS, 1, 7, 64]) {
    const run = runInChunks(backbone, inputIds, () => chunk);
    assert.equal(run.logits.length, ROWS * geometry.vocab_size);
    assert.equal(run.hidden.length, geometry.num_hidden_layers);
  }
  const launched = new Set(driver.launches.map((launch) => launch.name));
  for (const kernel of [
    'attention_bf16_d256',
    'attention_grouped_bf16_d256',
    'delta_net_recurrence_bf16',
    'moe_gate_up_bf16',
    'moe_down_bf16',
  ]) {
    assert.ok(launched.has(kernel), `${kernel} launched (launched: ${[...launched].sort().join(', ')})`);
  }
});
