// The streamed checkpoint load on the CUDA backend against the tensor-by-tensor load, on the `small` synthetic
// checkpoint: every weight tensor the model holds has the same device bytes (read back before plan packs the
// experts), the planned models draw the same frames, the device ledger holds the same bytes after both are planned
// (the streamed head freed once its candidate rows were gathered, each layer's routed experts once packed), and the
// stream's pinned host memory peaks at its two slots. A device allocation limit below the checkpoint is refused by
// name mid-reserve and leaves the ledger as it was. Skips, saying why, without CUDA.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CudaBackend } from '../../src/backend/cuda/backend.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import { type CudaBuffer, type CudaTensor, elementBytes } from '../../src/backend/cuda/tensors.ts';
import { generateFrames } from '../../src/model/generate.ts';
import { loadSpeechModel, type SpeechModelOptions } from '../../src/model/load-model.ts';
import type { SlotSpeechModel } from '../../src/model/speech-model.ts';
import type { StreamedLoadReport } from '../../src/model/streamed-source.ts';
import { DEFAULT_SAMPLING } from '../../src/model/types.ts';
import { speechCheckpointDir, speechPrompt } from './support/speech-model-checkpoint.ts';
import { tensorLayout, weightTensors } from './support/weight-tensors.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `no CUDA device: ${availability.reason}`;
const SLOT_BYTES = 8 * 1024 * 1024;
const CAPACITY = { lanes: 1, rowsPerLane: 256 };

function deviceBytes(backend: CudaBackend, tensor: CudaTensor): Uint8Array {
  return backend.cuda.download(tensor.data.pointer, new Uint8Array(tensor.data.elements * elementBytes(tensor.dtype)));
}

function frames(model: SlotSpeechModel<CudaBuffer>, seed: number): number[][] {
  const prompt = speechPrompt(model.candidates.semanticBegin, { textRows: 12, codeRows: 24, tailRows: 4 });
  const sampling = { ...DEFAULT_SAMPLING, seed };
  return generateFrames(model, prompt, { sampling, maxFrames: 16, prefillChunk: 64 }).frames.map((f) => [...f]);
}

async function load(dir: string, options: SpeechModelOptions) {
  const backend = new CudaBackend();
  const model = await loadSpeechModel(dir, backend, options);
  return { backend, model };
}

test('the streamed load gives the device bytes and frames of the tensor-by-tensor load, through two pinned slots', {
  skip,
}, async () => {
  const dir = await speechCheckpointDir('small');
  let report: StreamedLoadReport | undefined;
  const streamed = await load(dir, { stream: { slotBytes: SLOT_BYTES }, onStreamed: (r) => (report = r) });
  const plain = await load(dir, { stream: false });
  const pinned = streamed.backend.cuda.memory.usage('pinned-host');
  assert.equal(pinned.peakBytes, 2 * SLOT_BYTES, 'pinned host memory of the stream: the two slots');
  assert.equal(pinned.usedBytes, 0, 'the slots were freed');
  assert.ok(report !== undefined);
  const gbPerSecond = report.bytes / report.seconds / 1e9;
  const mode =
    report.directFiles.length > 0 ? `O_DIRECT (${report.bufferedFiles.length} files buffered)` : 'page cache';
  console.log(
    `streamed ${report.bytes} bytes in ${report.seconds.toFixed(2)} s (${gbPerSecond.toFixed(2)} GB/s), ${mode}`,
  );

  const ours = weightTensors(streamed.model);
  const theirs = weightTensors(plain.model);
  assert.deepEqual(tensorLayout(ours), tensorLayout(theirs));
  assert.ok(ours.length > 100, `${ours.length} tensors`);
  const differing = ours.filter(
    ([, tensor], index) =>
      !Buffer.from(deviceBytes(streamed.backend, tensor)).equals(deviceBytes(plain.backend, theirs[index]![1])),
  );
  assert.deepEqual(
    differing.map(([path]) => path),
    [],
    'tensors whose device bytes differ',
  );
  // A layer's routed experts share a block, each tensor at a multiple of 256 bytes in it; plan packs them and frees
  // the block, after which both loads hold the same device bytes.
  const held = () => [streamed, plain].map((loaded) => loaded.backend.cuda.memory.usage('device').usedBytes);
  const [loadedBytes, plainBytes] = held();
  const padding = loadedBytes! - plainBytes!;
  assert.ok(padding >= 0 && padding < 256 * ours.length, `${padding} bytes more than the tensors'`);
  streamed.model.plan(CAPACITY);
  plain.model.plan(CAPACITY);
  const [plannedBytes, plainPlannedBytes] = held();
  assert.equal(plannedBytes, plainPlannedBytes, 'both loads hold the same device bytes once planned');
  for (const seed of [5, 9]) assert.deepEqual(frames(streamed.model, seed), frames(plain.model, seed), `seed ${seed}`);
});

test('a device allocation limit below the checkpoint is refused by name mid-reserve and frees what was reserved', {
  skip,
}, async () => {
  const dir = await speechCheckpointDir('small');
  const probe = await load(dir, { stream: { slotBytes: SLOT_BYTES } });
  const needed = probe.backend.cuda.memory.usage('device').usedBytes;
  const backend = new CudaBackend({ deviceLimitBytes: Math.floor(needed / 2) });
  const before = backend.cuda.memory.usage('device').usedBytes;
  await assert.rejects(loadSpeechModel(dir, backend, { stream: { slotBytes: SLOT_BYTES } }), (error: Error) => {
    assert.equal((error as { code?: string }).code, 'WEIGHTS_ALLOCATION_FAILED');
    assert.match(
      error.message,
      /storage for (tensor \S+|the routed experts of layer \d+) \((\d+ tensors, )?\d+ bytes, after \d+ of \d+ tensors\) was refused/,
    );
    assert.match(error.message, /ALLOCATION_LIMIT_EXCEEDED/);
    return true;
  });
  assert.equal(backend.cuda.memory.usage('device').usedBytes, before, 'nothing reserved is left allocated');
  assert.equal(backend.cuda.memory.usage('pinned-host').usedBytes, 0);
});
