// The reference cache's storage through the scheduler, on a null model whose snapshots come from a byte ledger with
// a cap (as device snapshots do): every way out of the cache (evicted, replaced, forgotten, cleared, closed) gives a
// snapshot back exactly once and none is used after; room is made before a snapshot is allocated; a snapshot the
// allocator refuses leaves its request uncached and served; a request that fails before a step confirms its prefill
// leaves no entry.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NullCodec } from '../../src/engine/null-codec.ts';
import { type NullModelOptions, NullSpeechModel } from '../../src/engine/null-model.ts';
import { NullTextFrontEnd } from '../../src/engine/null-text.ts';
import type { EngineEvent } from '../../src/engine/protocol.ts';
import { ReferenceCache, snapshotRow } from '../../src/engine/reference-cache.ts';
import type { EncodedReference } from '../../src/engine/runtime.ts';
import { Scheduler } from '../../src/engine/scheduler.ts';
import { DramaError } from '../../src/errors.ts';
import { DEFAULT_SAMPLING, type Lane, type PromptRows, type SamplingSettings } from '../../src/model/types.ts';
import { CODES_PER_FRAME } from '../../src/shared/frame.ts';

const BYTES_PER_ROW = 100;
const FRAMES = 3;
const CHUNK = 8;

interface LedgerSnapshot {
  readonly bytes: number;
  readonly promptHash: number;
  readonly promptRows: number;
}

/** Null lanes' state as the null model keeps it (its fields are public). */
type NullLaneState = Lane & { promptHash: number; promptRows: number; position: number };

/** The null model with snapshots held against a byte cap; it refuses a discard twice and a use after discard. */
class LedgerModel extends NullSpeechModel {
  usedBytes = 0;
  peakBytes = 0;
  made = 0;
  readonly held = new Set<LedgerSnapshot>();
  readonly discarded = new Set<LedgerSnapshot>();
  /** A prompt whose last token is this fails its prefill past the snapshot row. */
  poisonToken = -1;
  /** The next snapshot throws this instead (a fault that is not the allocator's). */
  snapshotFault: Error | undefined;

  constructor(
    readonly capBytes: number,
    options: NullModelOptions = {},
  ) {
    super(options);
  }

  override prefill(lane: Lane, rows: PromptRows, from: number, to: number): void {
    if (rows.tokens.at(-1) === this.poisonToken && to > snapshotRow(rows)) {
      throw new DramaError('PLANTED_PREFILL_FAULT', 'the prefill past the snapshot row fails', { kind: 'device' });
    }
    super.prefill(lane, rows, from, to);
  }

  snapshotBytes(lane: Lane): number {
    return (lane as NullLaneState).promptRows * BYTES_PER_ROW;
  }

  snapshot(lane: Lane): LedgerSnapshot {
    const fault = this.snapshotFault;
    this.snapshotFault = undefined;
    if (fault !== undefined) throw fault;
    const state = lane as NullLaneState;
    const bytes = this.snapshotBytes(lane);
    if (this.usedBytes + bytes > this.capBytes) {
      throw new DramaError('ALLOCATION_LIMIT_EXCEEDED', `${bytes} bytes over the cap of ${this.capBytes}`, {
        kind: 'device',
      });
    }
    this.usedBytes += bytes;
    this.peakBytes = Math.max(this.peakBytes, this.usedBytes);
    this.made += 1;
    const snapshot = { bytes, promptHash: state.promptHash, promptRows: state.promptRows };
    this.held.add(snapshot);
    return snapshot;
  }

  restore(snapshot: LedgerSnapshot, sampling: SamplingSettings): Lane {
    assert.ok(this.held.has(snapshot), 'a discarded snapshot was restored');
    const lane = this.newLane(sampling) as NullLaneState;
    lane.promptHash = snapshot.promptHash;
    lane.promptRows = snapshot.promptRows;
    lane.position = snapshot.promptRows;
    return lane;
  }

  discard(snapshot: LedgerSnapshot): void {
    assert.ok(!this.discarded.has(snapshot), 'a snapshot was discarded twice');
    assert.ok(this.held.has(snapshot), 'a snapshot this model did not make was discarded');
    this.held.delete(snapshot);
    this.discarded.add(snapshot);
    this.usedBytes -= snapshot.bytes;
  }
}

const text = new NullTextFrontEnd();

function reference(salt: number, length = 20): EncodedReference {
  const frames = Array.from({ length }, (_, row) => {
    const frame = new Int32Array(CODES_PER_FRAME);
    for (let k = 0; k < CODES_PER_FRAME; k++) frame[k] = (row * 31 + k * 7 + salt * 101) % 1024;
    return frame;
  });
  return { text: `voice ${salt}`, frames };
}

function setup(model: LedgerModel, cache: ReferenceCache | undefined, lanes = 1) {
  const events: EngineEvent[] = [];
  const runtime = { modelId: 'ledger', model, codec: new NullCodec(), text };
  const scheduler = new Scheduler(runtime, { lanes, prefillChunk: CHUNK, referenceCache: cache }, (event) =>
    events.push(event),
  );
  let nextId = 1;
  /** Enqueues one request per voice, runs them all to the end, and returns each one's terminal event and PCM. */
  const serve = (voices: readonly (EncodedReference | undefined)[], spoken = 'hello') => {
    const ids = voices.map((voice) => {
      const id = nextId++;
      const prompt = text.prompt({
        text: spoken,
        instructions: undefined,
        references: voice ? [voice] : [],
        normalize: false,
      });
      const admission = { inputTokens: 1, promptRows: prompt.rows.tokens.length, pieces: 1, frameBudget: FRAMES };
      scheduler.enqueue({
        id,
        pieces: [prompt],
        sampling: { ...DEFAULT_SAMPLING, seed: 3 },
        admission,
        voices: voice ? [voice.text] : [],
      });
      return id;
    });
    while (scheduler.hasWork()) scheduler.runRound();
    return ids.map((id) => {
      const mine = events.filter((event) => 'id' in event && event.id === id);
      const pcm = mine.flatMap((event) => (event.type === 'audio' ? [Buffer.from(event.pcm.buffer)] : []));
      return { end: mine.at(-1)!, pcm: Buffer.concat(pcm) };
    });
  };
  return { scheduler, serve };
}

/** Bytes of one snapshot of `voice` in front of 'hello'. */
function snapshotBytesOf(voice: EncodedReference): number {
  const rows = text.prompt({ text: 'hello', instructions: undefined, references: [voice], normalize: false }).rows;
  return snapshotRow(rows) * BYTES_PER_ROW;
}

/** Every snapshot made is held by the cache or discarded once, and the ledger holds exactly the cache's bytes. */
function assertAccounted(model: LedgerModel, cache: ReferenceCache): void {
  assert.equal(model.held.size + model.discarded.size, model.made);
  assert.equal(model.held.size, cache.stats().entries);
  assert.equal(model.usedBytes, cache.stats().bytes);
}

test('evicted, replaced, forgotten, cleared and closed snapshots are each given back once, none used after', () => {
  const voices = [reference(1), reference(2), reference(3)];
  const one = snapshotBytesOf(voices[0]!);
  const cache = new ReferenceCache(2 * one);
  const model = new LedgerModel(10 * one);
  const { scheduler, serve } = setup(model, cache, 2);
  for (const outcome of serve([voices[0], voices[1]])) assert.equal(outcome.end.type, 'finished');
  assert.equal(model.discarded.size, 0);
  assertAccounted(model, cache);

  // Evicted: a third voice pushes out the least recently used one.
  serve([voices[2]]);
  assert.equal(model.discarded.size, 1, 'the eviction gave one snapshot back');
  assertAccounted(model, cache);
  assert.equal(serve([voices[0]])[0]!.end.type, 'finished', 'the evicted voice is served again, uncached');
  assert.equal(cache.stats().hits, 0);
  assertAccounted(model, cache);

  // Replaced: two lanes with the same prefix both miss; the second store replaces the first.
  const held = cache.stats().entries;
  cache.clear();
  const before = model.discarded.size;
  assert.equal(before, 2 + held, 'clear gave every entry back');
  const twins = serve([voices[1], voices[1]]);
  assert.ok(twins[0]!.pcm.equals(twins[1]!.pcm));
  assert.equal(model.made - model.discarded.size, 1, 'one entry is left of two stores');
  assert.equal(model.discarded.size, before + 1, 'the replaced snapshot was given back');
  assertAccounted(model, cache);

  // A hit restores a held snapshot; forgetting the voice gives it back.
  assert.equal(serve([voices[1]])[0]!.end.type, 'finished');
  assert.equal(cache.stats().hits, 1);
  scheduler.forgetVoice(voices[1]!.text);
  assert.equal(cache.stats().entries, 0);
  assertAccounted(model, cache);

  // Closed (shutdown): whatever is held goes back, and nothing is kept after.
  serve([voices[2]]);
  assert.equal(cache.stats().entries, 1);
  scheduler.releaseAll();
  assert.equal(model.usedBytes, 0);
  assert.equal(model.held.size, 0);
  serve([voices[0]]);
  assert.equal(model.held.size, 0, 'a closed cache keeps nothing');
  assertAccounted(model, cache);
});

test('room is made before a snapshot is allocated: a cap equal to the budget is never passed', () => {
  const voices = Array.from({ length: 8 }, (_, salt) => reference(salt + 10, 16 + salt));
  const largest = Math.max(...voices.map(snapshotBytesOf));
  const cache = new ReferenceCache(2 * largest);
  const model = new LedgerModel(cache.capacityBytes);
  const { serve } = setup(model, cache);
  for (const voice of voices) {
    assert.equal(serve([voice])[0]!.end.type, 'finished');
    assert.ok(cache.stats().bytes <= cache.capacityBytes);
    assertAccounted(model, cache);
  }
  assert.equal(cache.stats().storesFailed, 0, 'no snapshot met a full ledger');
  assert.ok(model.discarded.size >= voices.length - 2);
  assert.ok(model.peakBytes <= cache.capacityBytes);
});

test('a snapshot the allocator refuses leaves its request uncached and served, and is counted', () => {
  const voice = reference(4);
  const one = snapshotBytesOf(voice);
  const uncached = setup(new LedgerModel(0), undefined).serve([voice])[0]!;
  const model = new LedgerModel(one - 1);
  const cache = new ReferenceCache(4 * one);
  const { serve } = setup(model, cache);
  const outcomes = serve([voice, voice]);
  for (const outcome of outcomes) {
    assert.equal(outcome.end.type, 'finished', JSON.stringify(outcome.end));
    assert.ok(outcome.pcm.equals(uncached.pcm), 'the uncached bytes');
  }
  assert.deepEqual(
    [cache.stats().storesFailed, cache.stats().entries, cache.stats().hits, cache.stats().misses],
    [2, 0, 0, 2],
  );
  assert.equal(model.usedBytes, 0);
});

test('a snapshot larger than the whole budget is skipped before it is allocated', () => {
  const voice = reference(5);
  const model = new LedgerModel(Number.MAX_SAFE_INTEGER);
  const cache = new ReferenceCache(snapshotBytesOf(voice) - 1);
  const { serve } = setup(model, cache);
  assert.equal(serve([voice])[0]!.end.type, 'finished');
  assert.deepEqual([cache.stats().storesSkipped, model.made], [1, 0]);
});

test('a snapshot fault that is not the allocator fails its request only', () => {
  const voice = reference(6);
  const model = new LedgerModel(Number.MAX_SAFE_INTEGER);
  const cache = new ReferenceCache();
  const { serve } = setup(model, cache);
  model.snapshotFault = new DramaError('PLANTED_COPY_FAULT', 'the copy failed', { kind: 'device' });
  const failed = serve([voice])[0]!.end;
  assert.equal(failed.type === 'failed' && failed.error.code, 'PLANTED_COPY_FAULT');
  assert.equal(serve([voice])[0]!.end.type, 'finished', 'the next request is served');
  assert.equal(cache.stats().entries, 1);
  assertAccounted(model, cache);
});

test('a request that fails before a step confirms its prefill leaves no entry; one confirmed keeps it', () => {
  const model = new LedgerModel(Number.MAX_SAFE_INTEGER);
  const cache = new ReferenceCache();
  const { serve } = setup(model, cache);
  // Fails past the snapshot row: the snapshot was taken, then dropped and given back.
  model.poisonToken = 'z'.codePointAt(0)!;
  const poisoned = serve([reference(7)], 'hello z')[0]!.end;
  assert.equal(poisoned.type === 'failed' && poisoned.error.code, 'PLANTED_PREFILL_FAULT');
  assert.deepEqual([model.made, model.discarded.size, cache.stats().entries], [1, 1, 0]);
  // Fails at its first step (where a device fault of the prefill surfaces): no entry either.
  const failing = new LedgerModel(Number.MAX_SAFE_INTEGER, { failAtFrame: 0 });
  const failingCache = new ReferenceCache();
  const atStep = setup(failing, failingCache).serve([reference(8)])[0]!.end;
  assert.equal(atStep.type === 'failed' && atStep.error.code, 'NULL_MODEL_FAILURE');
  assert.deepEqual([failing.made, failing.discarded.size, failingCache.stats().entries], [1, 1, 0]);
  // A step ran before the failure: the prefill was confirmed and the entry stays.
  const later = new LedgerModel(Number.MAX_SAFE_INTEGER, { failAtFrame: 1 });
  const laterCache = new ReferenceCache();
  const afterStep = setup(later, laterCache).serve([reference(9)])[0]!.end;
  assert.equal(afterStep.type, 'failed');
  assert.deepEqual([later.made, later.discarded.size, laterCache.stats().entries], [1, 0, 1]);
});

test('store gives a replaced or oversized snapshot back at once, and close gives back the rest', () => {
  const rows: PromptRows = {
    tokens: Int32Array.from({ length: 6 }, (_, row) => row),
    codes: new Int32Array(6 * CODES_PER_FRAME).fill(-1),
    referenceRows: 4,
  };
  const released: number[] = [];
  const cache = new ReferenceCache(1000);
  cache.store(rows, { bytes: 400 }, [], () => released.push(1));
  cache.store(rows, { bytes: 400 }, [], () => released.push(2));
  cache.store(rows, { bytes: 2000 }, [], () => released.push(3));
  assert.deepEqual(released, [1, 3], 'the replaced one and the oversized one went back at once');
  cache.close();
  assert.deepEqual(released, [1, 3, 2]);
  cache.store(rows, { bytes: 400 }, [], () => released.push(4));
  assert.deepEqual(released, [1, 3, 2, 4], 'a closed cache gives a new snapshot back at once');
  assert.equal(cache.stats().storesSkipped, 2);
});
