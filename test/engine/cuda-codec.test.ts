// The CUDA codec's device bytes of a checkpoint folder, counted from its config and codec.pth's index before the
// weights are read (what lets the lanes be planned while the codec still loads): the same bytes as counted from the
// loaded codec, at every precision, with and without a stored RoPE table, under a training wrapper's prefix too.
// Counting runs on the host: no GPU is needed.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { float32ToTensor, type HostTensor } from '../../src/checkpoint/tensor.ts';
import { writeTorchCheckpoint } from '../../src/checkpoint/torch-pth.ts';
import { codecConfigToJson, TINY_CODEC_CONFIG } from '../../src/codec/config.ts';
import { loadCheckpointCodec } from '../../src/codec/reference.ts';
import { synthesizeCodecWeights } from '../../src/codec/synth-weights.ts';
import { CODEC_PRECISIONS } from '../../src/engine/codec-choice.ts';
import {
  checkpointCodecDeviceBytes,
  cudaCodecDeviceBytes,
  cudaCodecSettings,
  DEFAULT_CUDA_CODEC_SETTINGS,
} from '../../src/engine/cuda-codec.ts';
import { isDramaError } from '../../src/errors.ts';

const folders: string[] = [];
after(() => Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true }))));

async function checkpointWith(state: Map<string, HostTensor>): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'drama3-codec-bytes-'));
  folders.push(folder);
  await writeFile(join(folder, 'config.json'), JSON.stringify({ codec_config: codecConfigToJson(TINY_CODEC_CONFIG) }));
  await writeTorchCheckpoint(join(folder, 'codec.pth'), state);
  return folder;
}

/** Both counts at each precision: from the index, and from the loaded codec. */
async function counts(folder: string): Promise<{ indexed: number[]; loaded: number[] }> {
  const codec = await loadCheckpointCodec(folder);
  const settings = CODEC_PRECISIONS.map((precision) => ({ ...DEFAULT_CUDA_CODEC_SETTINGS, precision }));
  return {
    indexed: await Promise.all(settings.map((each) => checkpointCodecDeviceBytes(folder, each))),
    loaded: settings.map((each) => cudaCodecDeviceBytes(codec, each)),
  };
}

const plain = synthesizeCodecWeights(TINY_CODEC_CONFIG, 3);
const { headDim } = TINY_CODEC_CONFIG.postModule;
const table = float32ToTensor(new Float32Array(40 * headDim).fill(0.5), 'F32', [40, headDim / 2, 2]);

test("a folder's codec bytes counted from its index equal those of its loaded codec, at every precision", async () => {
  const { indexed, loaded } = await counts(await checkpointWith(plain));
  assert.deepEqual(indexed, loaded);
  assert.ok(indexed.every((bytes) => bytes > 0));
});

test('a stored RoPE table is counted from the index as the loaded codec uploads it, under a wrapper prefix too', async () => {
  const withTable = new Map([...plain, ['quantizer.post_module.freqs_cis', table]]);
  const wrapped = new Map([...withTable].map(([name, tensor]) => [`generator.${name}`, tensor]));
  const without = (await counts(await checkpointWith(plain))).indexed;
  for (const state of [withTable, wrapped]) {
    const { indexed, loaded } = await counts(await checkpointWith(state));
    assert.deepEqual(indexed, loaded);
    // Each context holds the table once: the decoder's post-module and nothing else at this prefix.
    assert.deepEqual(
      indexed.map((bytes, index) => bytes - without[index]!),
      indexed.map(() => 40 * headDim * 4),
    );
  }
});

test('a folder without codec.pth is refused by the same name as the codec load refuses it', async () => {
  const folder = await checkpointWith(plain);
  await rm(join(folder, 'codec.pth'));
  const refusals = await Promise.all([
    checkpointCodecDeviceBytes(folder, DEFAULT_CUDA_CODEC_SETTINGS).catch((error: unknown) => error),
    loadCheckpointCodec(folder).catch((error: unknown) => error),
  ]);
  assert.deepEqual(
    refusals.map((error) => (isDramaError(error) ? error.code : String(error))),
    ['CODEC_NOT_FOUND', 'CODEC_NOT_FOUND'],
  );
});

test('a loaded codec takes 1024 frames a call, or DRAMA3_CODEC_FRAMES_PER_CALL, refused by name when not a count', () => {
  const saved = process.env.DRAMA3_CODEC_FRAMES_PER_CALL;
  try {
    delete process.env.DRAMA3_CODEC_FRAMES_PER_CALL;
    assert.deepEqual(cudaCodecSettings('f32'), { lanes: 64, precision: 'f32', maxFramesPerCall: 1024 });
    process.env.DRAMA3_CODEC_FRAMES_PER_CALL = '256';
    assert.equal(cudaCodecSettings('f16').maxFramesPerCall, 256);
    for (const bad of ['0', '2.5', 'many']) {
      process.env.DRAMA3_CODEC_FRAMES_PER_CALL = bad;
      assert.throws(
        () => cudaCodecSettings('f16'),
        (error: unknown) => isDramaError(error) && error.code === 'CODEC_CALL_FRAMES_INVALID',
      );
    }
  } finally {
    if (saved === undefined) delete process.env.DRAMA3_CODEC_FRAMES_PER_CALL;
    else process.env.DRAMA3_CODEC_FRAMES_PER_CALL = saved;
  }
});
