// The frame bench's byte accounting (bench/support/frame-bytes.ts) against sums written out by hand from the full
// geometry (MODEL.md §2–§3), and against the weight map as a whole.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  expectedDistinctExperts,
  laneSlabBytes,
  laneStepStateBytes,
  stepBytes,
  weightMapBytes,
} from '../../bench/support/frame-bytes.ts';
import { tensorByteLength } from '../../src/checkpoint/tensor.ts';
import { FULL_PRESET } from '../../src/model/config.ts';
import { syntheticDeviceConfig, syntheticDeviceSpecs } from '../../src/synth/device-model.ts';

const { config, candidates } = syntheticDeviceConfig(FULL_PRESET);
const specs = syntheticDeviceSpecs(config);
const N = candidates.ids.length;
const H = 2048;

test('expected distinct experts: k at one row, all of them at many, 222 of 256 at 64 rows', () => {
  assert.equal(expectedDistinctExperts(256, 8, 1), 8);
  assert.ok(Math.abs(expectedDistinctExperts(256, 8, 64) - 222.44) < 0.01, `${expectedDistinctExperts(256, 8, 64)}`);
  assert.ok(Math.abs(expectedDistinctExperts(256, 8, 100_000) - 256) < 1e-9);
});

test('one step at batch 1 reads the parts written out by hand', () => {
  const bytes = stepBytes(config, specs, N, 1, 100);
  // Gated DeltaNet: qkv 8192, z 4096, b 32, a 32 rows of H; out 2048 × 4096; conv 8192 × 4; A_log, dt_bias 32; norm 128.
  const deltaNet = 2 * ((8192 + 4096 + 32 + 32) * H + H * 4096 + 8192 * 4 + 32 + 32 + 128);
  // Attention: q 8192, k 512, v 512 rows of H; o 2048 × 4096; q/k norms 256 each.
  const attention = 2 * ((8192 + 512 + 512) * H + H * 4096 + 256 + 256);
  const layerNorms = 2 * 2 * H;
  assert.equal(bytes.projections, 30 * deltaNet + 10 * attention + 40 * layerNorms);
  assert.equal(bytes.router, 40 * 2 * 256 * H);
  // 8 FP8 experts per layer: gate, up [512, 2048], down [2048, 512], each with 4 × 16 fp32 block scales.
  assert.equal(bytes.routedExperts, 40 * 8 * 3 * (512 * H + 4 * 16 * 4));
  // Shared expert gate/up/down at 512 and its [1, H] gate.
  assert.equal(bytes.sharedExpert, 40 * 2 * (3 * 512 * H + H));
  assert.equal(bytes.head, 2 * (N * H + H));
  // Tower layer: eh_proj [d, d + input], q 4096, k 512, v 512, o [d, 4096], MLP 3 × 6144 × d, five norms of d
  // (hnorm of its input), q/k norms 256; nine heads [1024, d].
  const towerLayer = 2 * (H * 2 * H + (4096 + 512 + 512) * H + H * 4096 + 3 * 6144 * H + 5 * H + 2 * 256);
  assert.equal(bytes.tower, 13 * towerLayer + 9 * 2 * 1024 * H);
  // The frame row's token and code rows, one code row per tower layer.
  assert.equal(bytes.embeddings, 2 * (2 * H + 13 * H));
  assert.equal(bytes.state, laneStepStateBytes(config, 100));
  assert.equal(bytes.expertsPerLayer, 8);
});

test('at a batch that reaches every expert, the step reads the whole map but the unread table rows', () => {
  const bytes = stepBytes(config, specs, N, 1_000_000, 0);
  const tables = specs
    .filter((spec) => spec.role === 'token_embedding' || spec.role === 'codebook_embedding')
    .reduce((sum, spec) => sum + tensorByteLength(spec.dtype, spec.shape), 0);
  const unreadHeadRows = 2 * (config.text.vocabSize - N) * H;
  const expected = weightMapBytes(specs) - tables - unreadHeadRows;
  assert.ok(
    Math.abs(bytes.weights - bytes.embeddings - expected) < 1,
    `${bytes.weights - bytes.embeddings} vs ${expected}`,
  );
});

test('lane slabs at 8192 rows: K/V of 10 + 13 attention layers and the DeltaNet state of 30', () => {
  const lane = laneSlabBytes(config, 8192);
  assert.equal(lane.keyValues, (10 + 13) * 2 * 2 * 256 * 2 * 8192);
  assert.equal(lane.deltaNet, 30 * (32 * 128 * 128 * 4 + 3 * 8192 * 2));
  // A step reads and writes the DeltaNet state and reads K/V rows 0..position, writing one more.
  assert.equal(laneStepStateBytes(config, 8190), 2 * lane.deltaNet + lane.keyValues);
});
