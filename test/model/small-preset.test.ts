// The `small` preset: the full geometry's head dims at toy width and depth (what the CUDA kernels can run). It must
// synthesize, load and step on the cpu, with the head dims the kernels need.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CpuBackend } from '../../src/backend/cpu/backend.ts';
import type { CpuBuffer } from '../../src/backend/cpu/tensors.ts';
import { cudaGeometryRefusals } from '../../src/engine/cuda-geometry.ts';
import { SMALL_PRESET } from '../../src/model/config.ts';
import { loadSpeechModel } from '../../src/model/load-model.ts';
import type { SlotSpeechModel } from '../../src/model/speech-model.ts';
import { DEFAULT_SAMPLING } from '../../src/model/types.ts';
import { synthesizeCheckpoint } from '../../src/synth/synthesize.ts';
import { samplePrompt } from './tiny-checkpoint.ts';

let root: string;
let model: SlotSpeechModel<CpuBuffer>;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'drama3-small-'));
  const dir = join(root, 'small');
  await synthesizeCheckpoint(dir, { preset: 'small', seed: 3, experts: 'fp8' });
  model = await loadSpeechModel(dir, new CpuBackend(), { prefillChunk: 16, capacity: { lanes: 2, rowsPerLane: 96 } });
});
after(() => rm(root, { recursive: true, force: true }));

test('small keeps the head dims the CUDA kernels serve', () => {
  const { text, tower } = model.config;
  assert.equal(text.hiddenSize, 512);
  assert.deepEqual(cudaGeometryRefusals(model.config), []);
  assert.equal(text.layerTypes.length, 4);
  assert.deepEqual([text.headDim, text.linearKeyHeadDim, text.linearValueHeadDim, tower.headDim], [256, 128, 128, 256]);
  assert.equal(text.rotaryDim, 64);
  assert.deepEqual([text.experts, text.expertsPerToken, text.expertIntermediate], [16, 8, 512]);
  assert.deepEqual(
    [tower.hiddenSize, tower.intermediate, tower.rotaryDim, tower.ropeStyle],
    [256, 512, 64, 'interleaved'],
  );
  assert.deepEqual(model.config.text.layerTypes, SMALL_PRESET.text.layerTypes);
});

test('small loads and draws frames on the cpu', () => {
  const prompt = samplePrompt(model.candidates.semanticBegin);
  const lane = model.newLane({ ...DEFAULT_SAMPLING, seed: 5 });
  model.prefill(lane, prompt, 0, prompt.tokens.length);
  const outcome = model.step([lane]);
  model.release(lane);
  assert.equal(outcome.length, 1);
  if (!outcome[0]!.end) assert.equal(outcome[0]!.frame.length, 10);
});
