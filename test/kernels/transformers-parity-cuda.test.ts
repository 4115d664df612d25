// CUDA against transformers on the `cuda` geometry of the Qwen3.5-MoE fixture (the head dims the kernels serve; made
// on the GPU machine by `tools/oracle/qwen35_moe.py OUT cuda`, bench/gpu-transformers-parity.sh; the folder in
// DRAMA3_TRANSFORMERS_FIXTURE): the backbone's top-1 over the fixture's 150 rows agrees with transformers' fp32 run at
// least as often as transformers' own bf16 run does, each disagreeing row listed with the fp32 run's margin between
// the two picks; and in chunks of 1, 7 and 64 the logits are the one prefill's bits. Each layer's median row error
// against the fp32 run is printed beside transformers' bf16 one. Skips, saying why, without a GPU or the fixture.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CudaBackend } from '../../src/backend/cuda/backend.ts';
import { CudaContext } from '../../src/backend/cuda/context.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import type { CudaBuffer } from '../../src/backend/cuda/tensors.ts';
import type { Backbone } from '../../src/model/backbone.ts';
import {
  type BackboneRun,
  loadBackboneOn,
  medianRowError,
  type ReferenceOutputs,
  readReference,
  runInChunks,
  topOneAgreement,
} from '../model/transformers-fixture.ts';

const fixture = process.env.DRAMA3_TRANSFORMERS_FIXTURE ?? '';
const availability = cudaAvailability();
const skip = !availability.available
  ? `no CUDA device: ${availability.reason}`
  : fixture === '' || !existsSync(join(fixture, 'outputs-bf16.safetensors'))
    ? 'no fixture: DRAMA3_TRANSFORMERS_FIXTURE must name a folder from tools/oracle/qwen35_moe.py OUT cuda (on a GPU)'
    : false;

let cuda: CudaContext | undefined;
let backend: CudaBackend | undefined;
let backbone: Backbone<CudaBuffer>;
let fp32: ReferenceOutputs;
let bf16: ReferenceOutputs;
let whole: BackboneRun;

before(async () => {
  if (skip) return;
  fp32 = await readReference('fp32', fixture);
  bf16 = await readReference('bf16', fixture);
  cuda = new CudaContext();
  backend = new CudaBackend(cuda);
  backbone = await loadBackboneOn(backend, fixture);
  console.log(`transformers parity on ${cuda.properties.name}, fixture ${fixture}`);
  whole = runInChunks(backbone, fp32.inputIds, () => fp32.inputIds.length);
});

after(() => {
  backend?.close();
  cuda?.close();
});

test('cuda top-1 agrees with transformers fp32 at least as often as transformers bf16 does', { skip }, () => {
  const rows = fp32.inputIds.length;
  const vocab = fp32.logits.length / rows;
  const ours = topOneAgreement(whole.logits, fp32.logits, rows, vocab);
  const theirs = topOneAgreement(bf16.logits, fp32.logits, rows, vocab);
  console.log(`top-1 against transformers fp32: cuda ${ours.equal} of ${rows}, transformers bf16 ${theirs.equal}`);
  for (const { row, margin } of ours.disagreeing) console.log(`  cuda differs: row ${row}, fp32 margin ${margin}`);
  whole.hidden.forEach((hidden, layer) => {
    const mine = medianRowError(hidden, fp32.hidden[layer]!, rows);
    const transformers = medianRowError(bf16.hidden[layer]!, fp32.hidden[layer]!, rows);
    console.log(
      `  layer ${layer}: median row error cuda ${mine.toExponential(3)}, bf16 ${transformers.toExponential(3)}`,
    );
  });
  assert.ok(ours.equal >= theirs.equal, `cuda ${ours.equal} of ${rows} < transformers bf16 ${theirs.equal}`);
});

test('cuda logits in chunks of 1, 7 and 64 rows are the one prefill bits', { skip }, () => {
  for (const size of [1, 7, 64]) {
    const chunked = runInChunks(backbone, fp32.inputIds, () => size);
    const first = chunked.logits.findIndex((value, index) => !Object.is(value, whole.logits[index]));
    assert.equal(
      first,
      -1,
      `chunks of ${size}: logit ${first} is ${chunked.logits[first]}, not ${whole.logits[first]}`,
    );
  }
});
