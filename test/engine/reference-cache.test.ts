// The reference-prefix cache on the real `tiny` checkpoint (cpu model, codec, tokenizer), driven through the
// scheduler: a cached voice gives byte-identical audio to the same request with the cache off (A → A, A → default →
// A, A → B → A, a changed last reference row or transcript, a hit prefilled together with a miss and the default
// voice), makes the same prefill cuts, and a request cancelled before its reference boundary leaves no entry. Plus
// the cache's own bookkeeping (LRU by bytes, voices, exact keys).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CpuBackend } from '../../src/backend/cpu/backend.ts';
import { loadCheckpointRuntime } from '../../src/engine/checkpoint-runtime.ts';
import type { EngineEvent } from '../../src/engine/protocol.ts';
import { ReferenceCache, snapshotBytes, snapshotRow } from '../../src/engine/reference-cache.ts';
import type { EncodedReference, SpeechRuntime } from '../../src/engine/runtime.ts';
import { Scheduler } from '../../src/engine/scheduler.ts';
import { loadSpeechModel } from '../../src/model/load-model.ts';
import { DEFAULT_SAMPLING, type PrefillPart, type PromptRows } from '../../src/model/types.ts';
import { CODES_PER_FRAME } from '../../src/shared/frame.ts';
import { tinyCheckpointDir } from '../model/tiny-checkpoint.ts';
import { TEXT, VOICE_A, VOICE_B } from './reference-voices.ts';

const CHUNK = 16;
const FRAMES = 5;
const base = await loadCheckpointRuntime(await tinyCheckpointDir(), CHUNK, (dir, options) =>
  loadSpeechModel(dir, new CpuBackend(), options),
);

/** The runtime with every prefill call recorded as [from, to). */
function recording(): { runtime: SpeechRuntime; cuts: [number, number][] } {
  const cuts: [number, number][] = [];
  const model = base.model as typeof base.model & { snapshot: unknown; restore: unknown };
  const wrapped = Object.create(model) as typeof model;
  wrapped.prefillTogether = (parts: readonly PrefillPart[]) => {
    for (const { from, to } of parts) cuts.push([from, to]);
    model.prefillTogether(parts);
  };
  return { runtime: { ...base, model: wrapped }, cuts };
}

interface Played {
  readonly pcm: Buffer;
  readonly frames: number;
}

let nextId = 1;

/** Enqueues one request speaking TEXT with `voice`; returns its id. */
function enqueue(scheduler: Scheduler, voice: readonly EncodedReference[], voices: readonly string[]): number {
  const id = nextId++;
  const prompt = base.text.prompt({ text: TEXT, instructions: undefined, references: voice, normalize: false });
  scheduler.enqueue({
    id,
    pieces: [prompt],
    sampling: { ...DEFAULT_SAMPLING, seed: 17 },
    admission: {
      inputTokens: prompt.textTokens,
      promptRows: prompt.rows.tokens.length,
      pieces: 1,
      frameBudget: FRAMES,
    },
    voices,
  });
  return id;
}

/** A finished request's PCM bytes and audio event count. */
function played(events: readonly EngineEvent[], id: number): Played {
  const mine = events.filter((event) => 'id' in event && event.id === id);
  assert.equal(mine.at(-1)?.type, 'finished', JSON.stringify(mine.at(-1)));
  const pcm = mine.flatMap((event) => (event.type === 'audio' ? [Buffer.from(event.pcm.buffer)] : []));
  return { pcm: Buffer.concat(pcm), frames: mine.filter((event) => event.type === 'audio').length };
}

/** Runs each request alone to its end on one scheduler; returns each request's PCM bytes. */
function play(scheduler: Scheduler, events: EngineEvent[], references: readonly EncodedReference[][]): Played[] {
  return references.map((voice) => {
    const id = enqueue(scheduler, voice, voice === references[0] ? ['a'] : []);
    while (scheduler.hasWork()) scheduler.runRound();
    return played(events, id);
  });
}

function scheduler(cache: ReferenceCache | undefined, runtime: SpeechRuntime = base, lanes = 1) {
  const events: EngineEvent[] = [];
  const instance = new Scheduler(runtime, { lanes, prefillChunk: CHUNK, referenceCache: cache }, (event) =>
    events.push(event),
  );
  return { scheduler: instance, events };
}

/** The audio of each voice list served with the cache off, each on a fresh scheduler. */
function uncached(voices: readonly EncodedReference[][]): Buffer[] {
  return voices.map((voice) => {
    const { scheduler: instance, events } = scheduler(undefined);
    return play(instance, events, [voice])[0]!.pcm;
  });
}

test('A → A, A → default → A and A → B → A give the uncached bytes; hits are counted', () => {
  const sequences = [
    [[VOICE_A], [VOICE_A]],
    [[VOICE_A], [], [VOICE_A]],
    [[VOICE_A], [VOICE_B], [VOICE_A]],
  ];
  for (const sequence of sequences) {
    const cache = new ReferenceCache();
    const { scheduler: instance, events } = scheduler(cache);
    const cached = play(instance, events, sequence).map((played) => played.pcm);
    const expected = uncached(sequence);
    assert.ok(expected[0]!.length > 0);
    cached.forEach((pcm, index) => {
      assert.ok(pcm.equals(expected[index]!), `request ${index} of ${sequence.length}`);
    });
    assert.equal(cache.stats().hits, 1, 'the last A is a hit');
    assert.equal(cache.stats().misses, sequence.length - 1);
  }
});

test('a hit, a miss and the default voice prefilled together in one round give their uncached bytes', () => {
  const cache = new ReferenceCache();
  const { scheduler: instance, events } = scheduler(cache, base, 3);
  play(instance, events, [[VOICE_A]]);
  // A restored at its snapshot row, B and the default voice from row 0: one joint prefill holds all three.
  const ids = [[VOICE_A], [VOICE_B], []].map((voice) => enqueue(instance, voice, []));
  while (instance.hasWork()) instance.runRound();
  const expected = uncached([[VOICE_A], [VOICE_B], []]);
  ids.forEach((id, index) => {
    assert.ok(played(events, id).pcm.equals(expected[index]!), `request ${index}`);
  });
  assert.equal(cache.stats().hits, 1, 'the second A is a hit');
});

test('a changed last reference row or transcript misses and still gives the uncached bytes', () => {
  const lastChanged = VOICE_A.frames.map((frame) => frame.slice());
  lastChanged.at(-1)![3] = (lastChanged.at(-1)![3]! + 1) % 1024;
  const variants = [
    { text: VOICE_A.text, frames: lastChanged },
    { text: `${VOICE_A.text.slice(0, -1)}!`, frames: VOICE_A.frames },
  ];
  const cache = new ReferenceCache();
  const { scheduler: instance, events } = scheduler(cache);
  const sequence = [[VOICE_A], [variants[0]!], [variants[1]!]];
  const cached = play(instance, events, sequence).map((played) => played.pcm);
  const expected = uncached(sequence);
  cached.forEach((pcm, index) => {
    assert.ok(pcm.equals(expected[index]!), `request ${index}`);
  });
  assert.ok(!expected[1]!.equals(expected[0]!), 'the variant sounds different');
  assert.equal(cache.stats().hits, 0);
  assert.equal(cache.stats().entries, 3);
});

test("a hit prefills only the rows after the snapshot row, in chunks counted from it, the uncached request's cuts", () => {
  const cache = new ReferenceCache();
  const { runtime, cuts } = recording();
  const { scheduler: instance, events } = scheduler(cache, runtime);
  play(instance, events, [[VOICE_A]]);
  const missCuts = cuts.splice(0);
  play(instance, events, [[VOICE_A]]);
  const prompt = base.text.prompt({ text: TEXT, instructions: undefined, references: [VOICE_A], normalize: false });
  const row = snapshotRow(prompt.rows);
  assert.ok(row > CHUNK && row % CHUNK !== 0, `snapshot row ${row} falls inside a chunk`);
  assert.ok(
    missCuts.some(([, to]) => to === row),
    'the miss cuts at the snapshot row',
  );
  const total = prompt.rows.tokens.length;
  // Before the snapshot row the cuts fall at multiples of the chunk from row 0, after it at multiples past it.
  assert.ok(missCuts.every(([, to]) => to === row || to === total || (to - (to > row ? row : 0)) % CHUNK === 0));
  assert.deepEqual(
    cuts,
    missCuts.filter(([from]) => from >= row),
  );
  // So the hit's rows go in whole chunks from its snapshot row: a chunk's worth of text rows is one piece.
  const expected: [number, number][] = [];
  for (let from = row; from < total; from += CHUNK) expected.push([from, Math.min(total, from + CHUNK)]);
  assert.deepEqual(cuts, expected);
  assert.equal(cache.stats().rowsSaved, row);
});

test('a request cancelled before its reference boundary leaves no entry', () => {
  const cache = new ReferenceCache();
  const { scheduler: instance, events } = scheduler(cache);
  const prompt = base.text.prompt({ text: TEXT, instructions: undefined, references: [VOICE_A], normalize: false });
  assert.ok(snapshotRow(prompt.rows) > CHUNK);
  const admission = { inputTokens: 1, promptRows: prompt.rows.tokens.length, pieces: 1, frameBudget: FRAMES };
  instance.enqueue({ id: 900, pieces: [prompt], sampling: DEFAULT_SAMPLING, admission });
  instance.runRound();
  instance.cancel(900);
  instance.runRound();
  assert.equal(events.at(-2)?.type, 'cancelled');
  assert.equal(cache.stats().entries, 0);
  assert.equal(instance.hasWork(), false);
});

test('forgetting a voice drops its entries; the cache stays within its bytes, least recently used out', () => {
  const cache = new ReferenceCache();
  const { scheduler: instance, events } = scheduler(cache);
  play(instance, events, [[VOICE_A], [VOICE_B]]);
  assert.equal(cache.stats().entries, 2);
  instance.forgetVoice('a');
  assert.equal(cache.stats().entries, 1);

  const rows = (salt: number): PromptRows => {
    const tokens = Int32Array.from({ length: 6 }, (_, row) => row + salt);
    return { tokens, codes: new Int32Array(6 * CODES_PER_FRAME).fill(-1), referenceRows: 4 };
  };
  const small = new ReferenceCache(2000);
  small.store(rows(1), { state: new Float32Array(200) }, []);
  small.store(rows(2), { state: new Float32Array(200) }, []);
  assert.ok(small.lookup(rows(1)) !== undefined);
  small.store(rows(3), { state: new Float32Array(200) }, []);
  assert.equal(small.stats().entries, 2);
  assert.ok(small.stats().bytes <= 2000);
  assert.equal(small.lookup(rows(2)), undefined, 'the least recently used entry left');
  assert.ok(small.lookup(rows(1)) !== undefined && small.lookup(rows(3)) !== undefined);
  const changed = rows(1);
  changed.tokens[3] = 99;
  assert.equal(small.lookup(changed), undefined, 'a different prefix row misses');
  small.store(rows(4), { state: new Float32Array(1000) }, []);
  assert.equal(small.lookup(rows(4)), undefined, 'an entry larger than the budget is not kept');
});

test('a snapshot is sized by its typed arrays, or by the bytes it states (device memory)', () => {
  const arrays = { backbone: [new Float32Array(10), new Float64Array(3)], hidden: new Float32Array(5), rows: 7 };
  assert.equal(snapshotBytes(arrays), 40 + 24 + 20);
  assert.equal(snapshotBytes({ bytes: 4096, handles: [1, 2] }), 4096);
});
