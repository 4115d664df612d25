// A lane snapshot's storage on the real `tiny` model (cpu backend): its size is known before it is taken, discard
// gives every part back to the backend exactly once, the backend refuses a second release and any use of a released
// part, and a snapshot whose allocation fails part way gives back the parts it had made.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CpuBuffer } from '../../src/backend/cpu/tensors.ts';
import type { Tensor } from '../../src/backend/types.ts';
import { DramaError } from '../../src/errors.ts';
import { DEFAULT_SAMPLING } from '../../src/model/types.ts';
import { type CpuSpeechModel, loadTinyModel, samplePrompt } from './tiny-checkpoint.ts';

const model: CpuSpeechModel = await loadTinyModel();
model.plan({ lanes: 2, rowsPerLane: 128 });
const prompt = samplePrompt(model.candidates.semanticBegin);
const PREFIX_ROWS = 69;

/** Counts the backend's allocations and the releases it took, by tensor storage, while `body` runs. */
function counted<T>(body: (made: Set<unknown>, released: Map<unknown, number>) => T): T {
  const backend = model.backend;
  const allocate = backend.allocate.bind(backend);
  const release = backend.release.bind(backend);
  const made = new Set<unknown>();
  const released = new Map<unknown, number>();
  backend.allocate = (dtype, shape) => {
    const tensor = allocate(dtype, shape);
    made.add(tensor.data);
    return tensor;
  };
  backend.release = (tensors: readonly Tensor<CpuBuffer>[]) => {
    release(tensors);
    for (const tensor of tensors) released.set(tensor.data, (released.get(tensor.data) ?? 0) + 1);
  };
  try {
    return body(made, released);
  } finally {
    backend.allocate = allocate;
    backend.release = release;
  }
}

function prefixLane() {
  const lane = model.newLane(DEFAULT_SAMPLING);
  model.prefill(lane, prompt, 0, PREFIX_ROWS);
  return lane;
}

test('discard gives each part back once; a second discard and a restore after it are refused', () => {
  counted((made, released) => {
    const lane = prefixLane();
    const expected = model.snapshotBytes(lane);
    const snapshot = model.snapshot(lane);
    model.release(lane);
    assert.equal(snapshot.bytes, expected, 'the size known before equals the size taken');
    assert.equal(made.size, snapshot.parts.length);
    const copy = model.restore(snapshot, DEFAULT_SAMPLING);
    const kept = model.snapshot(copy);
    model.release(copy);
    model.discard(snapshot);
    assert.deepEqual(
      snapshot.parts.map((part) => released.get(part.data)),
      snapshot.parts.map(() => 1),
    );
    assert.throws(() => model.discard(snapshot), { code: 'TENSOR_NOT_HELD' });
    assert.throws(() => model.restore(snapshot, DEFAULT_SAMPLING), { code: 'TENSOR_RELEASED' });
    // The refused restore gave its lane back; a live snapshot still restores after the other was given back.
    const restored = model.restore(kept, DEFAULT_SAMPLING);
    model.release(restored);
    model.discard(kept);
    assert.equal(released.size, made.size, 'every part made was given back');
    assert.ok([...released.values()].every((count) => count === 1));
  });
});

test('a snapshot whose allocation fails part way gives back the parts it made and throws the refusal', () => {
  counted((made, released) => {
    const lane = prefixLane();
    const backend = model.backend;
    const allocate = backend.allocate;
    let calls = 0;
    backend.allocate = (dtype, shape) => {
      calls += 1;
      if (calls === 3) throw new DramaError('ALLOCATION_LIMIT_EXCEEDED', 'the planted cap', { kind: 'device' });
      return allocate(dtype, shape);
    };
    assert.throws(() => model.snapshot(lane), { code: 'ALLOCATION_LIMIT_EXCEEDED' });
    backend.allocate = allocate;
    assert.equal(made.size, 2);
    assert.deepEqual([...released.values()], [1, 1], 'both parts made went back');
    // The lane itself is untouched: it goes on to a whole snapshot.
    const snapshot = model.snapshot(lane);
    assert.equal(snapshot.rows, PREFIX_ROWS);
    model.discard(snapshot);
    model.release(lane);
  });
});
