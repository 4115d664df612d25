// The cuda weight store without a GPU, over the host imitation of the driver (whose copies from pinned memory run
// late, at the next synchronisation, as the real ones may): the tiny checkpoint streamed through two pinned slots
// gives every weight tensor the bytes of the tensor-by-tensor load, holds the same device bytes once loaded, peaks
// at the two slots of pinned memory, and frees a tensor's allocation when the backend gives the tensor back.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { CudaBackend } from '../../src/backend/cuda/backend.ts';
import { MemoryPool } from '../../src/backend/cuda/memory.ts';
import { type CudaBuffer, elementBytes } from '../../src/backend/cuda/tensors.ts';
import { CudaWeightStore } from '../../src/backend/cuda/weight-store.ts';
import { loadSpeechModel, type SpeechModelOptions } from '../../src/model/load-model.ts';
import { tensorLayout, weightTensors } from '../kernels/support/weight-tensors.ts';
import { tinyCheckpointDir } from '../model/tiny-checkpoint.ts';
import { FakeDriver, fakeContext, observeArguments } from './support/fake-cuda.ts';

const SLOT_BYTES = 64 * 1024;
const dir = await tinyCheckpointDir();

/** A cuda backend over the imitation driver; `deviceBytes` replaces its allocation limit. */
function fakeBackend(deviceBytes?: number) {
  const driver = new FakeDriver();
  after(observeArguments(driver));
  const cuda = fakeContext(driver);
  if (deviceBytes !== undefined) {
    const release = (pointer: bigint) => driver.freeDevice(pointer);
    const memory = new MemoryPool(
      { allocate: (_kind, bytes) => driver.allocateDevice(bytes), release: (_kind, pointer) => release(pointer) },
      { deviceBytes, pinnedHostBytes: 1 << 20 },
    );
    Object.assign(cuda, { memory });
  }
  const backend = new CudaBackend(cuda);
  const store = new CudaWeightStore(
    backend.cuda,
    (giveBack) => backend.addWeightOwner(giveBack),
    (pointer, bytes) => driver.bytes(pointer, bytes),
  );
  backend.weightStore = () => store;
  return { driver, backend };
}

async function fakeLoad(options: SpeechModelOptions) {
  const { driver, backend } = fakeBackend();
  const store = new CudaWeightStore(
    backend.cuda,
    (giveBack) => backend.addWeightOwner(giveBack),
    (pointer, bytes) => driver.bytes(pointer, bytes),
  );
  backend.weightStore = () => store;
  const model = await loadSpeechModel<CudaBuffer>(dir, backend, options);
  const bytesOf = (tensor: { dtype: Parameters<typeof elementBytes>[0]; data: CudaBuffer }) =>
    driver.bytes(tensor.data.pointer, tensor.data.elements * elementBytes(tensor.dtype));
  return { driver, backend, model, bytesOf };
}

describe('the cuda weight store (host imitation of the driver)', () => {
  test('streams the tiny checkpoint into the bytes of the tensor-by-tensor load, through two pinned slots', async () => {
    const streamed = await fakeLoad({ stream: { slotBytes: SLOT_BYTES } });
    const plain = await fakeLoad({ stream: false });
    const ours = weightTensors(streamed.model);
    const theirs = weightTensors(plain.model);
    assert.deepEqual(tensorLayout(ours), tensorLayout(theirs));
    assert.ok(ours.length > 50, `${ours.length} tensors`);
    const differing = ours
      .filter(([, tensor], index) => !Buffer.from(streamed.bytesOf(tensor)).equals(plain.bytesOf(theirs[index]![1])))
      .map(([path]) => path);
    assert.deepEqual(differing, [], 'tensors whose bytes differ');
    const pinned = streamed.backend.cuda.memory.usage('pinned-host');
    assert.equal(pinned.peakBytes, 2 * SLOT_BYTES, 'pinned memory of the stream: the two slots');
    assert.equal(pinned.usedBytes, 0, 'the slots were freed');
    assert.equal(streamed.driver.queuedCopies, 0, 'every copy ran before the slots were freed');
    assert.ok(streamed.driver.events.includes('synchronize event'), 'slots were refilled after their copies');
    // A layer's routed experts share a block, each tensor at a multiple of 256 bytes in it.
    const padding =
      streamed.backend.cuda.memory.usage('device').usedBytes - plain.backend.cuda.memory.usage('device').usedBytes;
    assert.ok(padding >= 0 && padding < 256 * ours.length, `${padding} bytes more than the tensors'`);
  });

  test('an allocation limit below the checkpoint is refused by name mid-reserve and frees what was reserved', async () => {
    // One byte short of what the streamed load reserves, whatever the checkpoint's size: refused after the first block.
    const whole = fakeBackend();
    let reserved = 0;
    const onStreamed = () => (reserved = whole.backend.cuda.memory.usage('device').usedBytes);
    await loadSpeechModel(dir, whole.backend, { stream: { slotBytes: SLOT_BYTES }, onStreamed });
    const { backend } = fakeBackend(reserved - 1);
    await assert.rejects(loadSpeechModel(dir, backend, { stream: { slotBytes: SLOT_BYTES } }), (error: Error) => {
      assert.equal((error as { code?: string }).code, 'WEIGHTS_ALLOCATION_FAILED');
      assert.match(
        error.message,
        /storage for tensor \S+ \(\d+ bytes, after [1-9]\d* of \d+ tensors\).*ALLOCATION_LIMIT_EXCEEDED/,
      );
      return true;
    });
    assert.equal(backend.cuda.memory.usage('device').usedBytes, 0);
    assert.equal(backend.cuda.memory.usage('pinned-host').usedBytes, 0);
  });

  test('a copy the driver refuses mid-stream frees every allocation and the slots', async () => {
    const { driver, backend } = fakeBackend();
    const copy = driver.copyHostToDevice.bind(driver);
    let copies = 0;
    driver.copyHostToDevice = (...args) => {
      if (++copies === 30) throw new Error('CUDA_ERROR_ILLEGAL_ADDRESS');
      copy(...args);
    };
    await assert.rejects(loadSpeechModel(dir, backend, { stream: { slotBytes: SLOT_BYTES } }), /ILLEGAL_ADDRESS/);
    assert.ok(copies >= 30);
    assert.equal(backend.cuda.memory.usage('device').usedBytes, 0);
    assert.equal(backend.cuda.memory.usage('pinned-host').usedBytes, 0);
    assert.equal(driver.queuedCopies, 0);
  });

  test("a layer's routed experts are one allocation, freed when the backend gives back the last of them", async () => {
    const { driver, backend, model } = await fakeLoad({ stream: { slotBytes: SLOT_BYTES } });
    const experts = model.backbone.layers[0]!.moe.experts.flatMap((expert) => [expert.gate, expert.up, expert.down]);
    const pieces = experts.flatMap((tensor) => [tensor, ...(tensor.scales === undefined ? [] : [tensor.scales])]);
    const expertBytes = pieces.reduce((sum, tensor) => sum + tensor.data.elements * elementBytes(tensor.dtype), 0);
    const before = backend.cuda.memory.usage('device').usedBytes;
    const free = driver.freeDevice.bind(driver);
    let frees = 0;
    driver.freeDevice = (pointer) => {
      frees += 1;
      free(pointer);
    };
    backend.releaseWeights(experts.slice(1));
    assert.equal(backend.cuda.memory.usage('device').usedBytes, before, 'nothing freed while one expert is held');
    backend.releaseWeights(experts.slice(0, 1));
    const freed = before - backend.cuda.memory.usage('device').usedBytes;
    assert.ok(freed >= expertBytes && freed < expertBytes + 256 * pieces.length, `${freed} bytes freed`);
    assert.equal(frees, 1, 'one allocation freed');
    assert.throws(() => backend.releaseWeights(experts.slice(0, 1)), { code: 'WEIGHT_NOT_OWNED' });
  });
});
