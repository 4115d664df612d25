// The reference-prefix cache on CUDA (contract 4 on the device): the `small` synthetic checkpoint with the speech model
// on the cuda backend (the codec and the text front end on the cpu), driven through the scheduler like the cpu test
// (test/engine/reference-cache.test.ts). Cached and uncached give byte-identical audio for A → A, A → default → A,
// A → B → A, a changed last reference row and a changed transcript; then, over many distinct references, the device
// allocator holds exactly the bytes the cache reports, the cache stays within its budget, and once it is cleared the
// allocator is back where it stood before the cache held anything. Skips, saying why, without a CUDA device.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { CudaBackend } from '../../src/backend/cuda/backend.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import type { CudaBuffer } from '../../src/backend/cuda/tensors.ts';
import { rowBudget } from '../../src/engine/lane-budget.ts';
import { loadRuntime } from '../../src/engine/load-runtime.ts';
import type { EngineEvent } from '../../src/engine/protocol.ts';
import { ReferenceCache, snapshotRow } from '../../src/engine/reference-cache.ts';
import { ReferencePrefill } from '../../src/engine/reference-prefill.ts';
import type { EncodedReference, SpeechRuntime } from '../../src/engine/runtime.ts';
import { Scheduler } from '../../src/engine/scheduler.ts';
import type { SlotSpeechModel } from '../../src/model/speech-model.ts';
import { DEFAULT_SAMPLING } from '../../src/model/types.ts';
import { referenceFrames, TEXT, VOICE_A, VOICE_B } from '../engine/reference-voices.ts';
import { speechCheckpointDir } from './support/speech-model-checkpoint.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `needs a CUDA device: ${availability.reason}`;
/** The scheduler's prefill chunk: the snapshot rows fall inside a chunk, so the cut at them is tested too. */
const CHUNK = 16;
const FRAMES = 5;
const ROWS_PER_LANE = 1024;

let runtime: SpeechRuntime | undefined;
let nextId = 1;

before(async () => {
  if (skip) return;
  const dir = await speechCheckpointDir('small');
  runtime = await loadRuntime({ kind: 'checkpoint', dir, prefillChunk: 64, backend: 'cuda', codecBackend: 'cpu' });
});

after(() => {
  if (runtime !== undefined) ((runtime.model as SlotSpeechModel<CudaBuffer>).backend as CudaBackend).close();
});

function deviceUsed(): number {
  return runtime!.memory!.device().usedBytes;
}

/** A scheduler of one lane over the runtime; every scheduler plans the same capacity, so the slabs are shared. */
function scheduler(cache: ReferenceCache | undefined) {
  const events: EngineEvent[] = [];
  const budget = rowBudget(1, runtime!.model.contextRows, ROWS_PER_LANE);
  const instance = new Scheduler(runtime!, { lanes: 1, prefillChunk: CHUNK, referenceCache: cache, budget }, (event) =>
    events.push(event),
  );
  return { instance, events };
}

function prompt(voice: readonly EncodedReference[]) {
  return runtime!.text.prompt({ text: TEXT, instructions: undefined, references: voice, normalize: false });
}

/** Serves each voice list alone, in order, on one scheduler; returns each request's PCM bytes. */
function play(cache: ReferenceCache | undefined, voices: readonly EncodedReference[][]): Buffer[] {
  const { instance, events } = scheduler(cache);
  return voices.map((voice) => {
    const id = nextId++;
    const built = prompt(voice);
    const admission = {
      inputTokens: built.textTokens,
      promptRows: built.rows.tokens.length,
      pieces: 1,
      frameBudget: FRAMES,
    };
    instance.enqueue({ id, pieces: [built], sampling: { ...DEFAULT_SAMPLING, seed: 17 }, admission, voices: [] });
    while (instance.hasWork()) instance.runRound();
    const mine = events.filter((event) => 'id' in event && event.id === id);
    assert.equal(mine.at(-1)?.type, 'finished', JSON.stringify(mine.at(-1)));
    return Buffer.concat(mine.flatMap((event) => (event.type === 'audio' ? [Buffer.from(event.pcm.buffer)] : [])));
  });
}

/** Each voice list served with the cache off, each on its own scheduler. */
function uncached(voices: readonly EncodedReference[][]): Buffer[] {
  return voices.map((voice) => play(undefined, [voice])[0]!);
}

test('small on cuda: A → A, A → default → A, A → B → A, a changed last row or transcript: cached = uncached', {
  skip,
}, () => {
  // Every code of the last row changes (its token too): a change small enough can draw the same frames.
  const lastChanged = [...VOICE_A.frames.slice(0, -1), referenceFrames(1, 99)[0]!];
  const rowChanged = { text: VOICE_A.text, frames: lastChanged };
  const textChanged = { text: `${VOICE_A.text.slice(0, -1)}!`, frames: VOICE_A.frames };
  const scenarios = [
    { name: 'A → A', voices: [[VOICE_A], [VOICE_A]], hits: 1 },
    { name: 'A → default → A', voices: [[VOICE_A], [], [VOICE_A]], hits: 1 },
    { name: 'A → B → A', voices: [[VOICE_A], [VOICE_B], [VOICE_A]], hits: 1 },
    { name: 'A → changed last row → changed transcript', voices: [[VOICE_A], [rowChanged], [textChanged]], hits: 0 },
  ];
  const row = snapshotRow(prompt([VOICE_A]).rows);
  assert.ok(row > CHUNK && row % CHUNK !== 0, `snapshot row ${row} falls inside a chunk`);
  for (const { name, voices, hits } of scenarios) {
    const cache = new ReferenceCache();
    const cached = play(cache, voices);
    const expected = uncached(voices);
    assert.ok(expected[0]!.length > 0);
    cached.forEach((pcm, index) => {
      assert.ok(pcm.equals(expected[index]!), `${name}: request ${index} differs from its uncached bytes`);
    });
    const stats = cache.stats();
    assert.equal(stats.hits, hits, `${name}: hits`);
    assert.equal(stats.storesFailed + stats.storesSkipped, 0, `${name}: every snapshot was kept`);
    if (hits === 0) {
      assert.ok(!expected[1]!.equals(expected[0]!), `${name}: the changed reference sounds different`);
      assert.ok(!expected[2]!.equals(expected[0]!), `${name}: the changed transcript sounds different`);
    }
    console.log(
      `${name}: ${stats.hits} hits, ${stats.misses} misses, ${stats.entries} entries of ${stats.bytes} bytes`,
    );
    cache.close();
  }
});

test('small on cuda: the allocator holds exactly the cache bytes, within the budget, and all of it goes back', {
  skip,
}, () => {
  const model = runtime!.model as SlotSpeechModel<CudaBuffer>;
  const voices = Array.from({ length: 12 }, (_, index) => ({
    text: `Reference number ${index + 10} speaks.`,
    frames: referenceFrames(30, index + 10),
  }));
  // One lane prefilled to its snapshot row through the cache's cuts; returns whether it was a hit.
  const prefillOnce = (prefill: ReferencePrefill, voice: EncodedReference): boolean => {
    const rows = prompt([voice]).rows;
    const target = snapshotRow(rows);
    let { lane, prefilled } = prefill.open(rows, DEFAULT_SAMPLING);
    const hit = prefilled > 0;
    while (prefilled < target) {
      const to = prefill.nextCut(rows, prefilled, CHUNK);
      model.prefill(lane, rows, prefilled, to);
      prefill.prefilledTo(lane, rows, to, []);
      prefilled = to;
    }
    model.release(lane);
    return hit;
  };
  // Plans the lanes (the same capacity as the audio test's) and warms the prefill once before the baseline.
  scheduler(undefined);
  prefillOnce(new ReferencePrefill(model, undefined), voices[0]!);
  const baseline = deviceUsed();
  const probe = model.newLane(DEFAULT_SAMPLING);
  const probeRows = prompt([voices[0]!]).rows;
  model.prefill(probe, probeRows, 0, snapshotRow(probeRows));
  const one = model.snapshotBytes(probe);
  model.release(probe);
  const cache = new ReferenceCache(Math.floor(3.5 * one));
  const prefill = new ReferencePrefill(model, cache);
  for (const voice of voices) {
    assert.equal(prefillOnce(prefill, voice), false);
    const stats = cache.stats();
    assert.equal(deviceUsed() - baseline, stats.bytes, 'the device holds exactly the bytes the cache reports');
    assert.ok(stats.bytes <= stats.capacityBytes, `${stats.bytes} bytes over the budget of ${stats.capacityBytes}`);
    assert.equal(stats.storesFailed + stats.storesSkipped, 0);
  }
  assert.equal(prefillOnce(prefill, voices.at(-1)!), true, 'the latest reference is still held');
  const held = cache.stats();
  console.log(
    `${voices.length} references of about ${one} bytes each under a budget of ${held.capacityBytes}: ${held.entries} ` +
      `held, ${held.bytes} bytes; the device at ${deviceUsed()} against ${baseline} before`,
  );
  assert.ok(held.entries >= 2 && held.entries < voices.length, `${held.entries} entries: evictions happened`);
  cache.clear();
  assert.equal(deviceUsed(), baseline, 'cleared, the cache left nothing on the device');
  // One snapshot by hand: the ledger moves by its stated bytes, and a second discard is refused.
  const lane = model.newLane(DEFAULT_SAMPLING);
  model.prefill(lane, probeRows, 0, snapshotRow(probeRows));
  const snapshot = model.snapshot(lane);
  model.release(lane);
  assert.equal(snapshot.bytes, one);
  assert.equal(deviceUsed() - baseline, one);
  model.discard(snapshot);
  assert.throws(() => model.discard(snapshot), { code: 'TENSOR_NOT_HELD' });
  assert.equal(deviceUsed(), baseline);
});
