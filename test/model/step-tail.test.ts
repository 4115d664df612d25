// A frame step's tail (the tower layers whose codes the next step's input does not read) is queued through
// Backend.tail so that a backend that queues work runs it beside the next step's head. That is exact only if the
// tail shares no buffer with the work queued beside it. Here the cpu backend is wrapped in one that emulates the
// queueing (tail and joinTail) and notes which allocated buffers every call touches; over steps queued one ahead,
// lanes ending, released and replaced, no buffer a tail touches may be touched by the work queued beside it. The
// frames must also be the plain cpu model's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CpuBackend } from '../../src/backend/cpu/backend.ts';
import type { CpuBuffer } from '../../src/backend/cpu/tensors.ts';
import type { Backend } from '../../src/backend/types.ts';
import { loadSpeechModel } from '../../src/model/load-model.ts';
import type { SlotSpeechModel } from '../../src/model/speech-model.ts';
import { DEFAULT_SAMPLING, type FrameOutcome, type Lane } from '../../src/model/types.ts';
import { loadTinyModel, mixedPrompt, tinyCheckpointDir } from './tiny-checkpoint.ts';

const CAPACITY = { lanes: 4, rowsPerLane: 128 };

interface Touches {
  readonly buffers: Set<ArrayBufferLike>;
  readonly calls: string[];
}

/** The cpu backend with tail() and joinTail() as a queueing backend has them, noting what each part touches. */
function hazardBackend() {
  const cpu = new CpuBackend();
  const allocated = new Set<ArrayBufferLike>();
  /** Tails queued and not yet joined, each with what the work queued after it touched. */
  const open: { tail: Touches; beside: Touches }[] = [];
  const closed: { tail: Touches; beside: Touches }[] = [];
  let inTail: Touches | undefined;
  const note = (value: unknown, into: Set<ArrayBufferLike>, depth: number) => {
    if (ArrayBuffer.isView(value)) {
      if (allocated.has(value.buffer)) into.add(value.buffer);
      return;
    }
    if (depth === 0 || value === null || typeof value !== 'object') return;
    for (const inner of Object.values(value)) note(inner, into, depth - 1);
  };
  const touch = (name: string, args: unknown[]) => {
    const touched = new Set<ArrayBufferLike>();
    for (const arg of args) note(arg, touched, 3);
    const parts = inTail !== undefined ? [inTail] : open.map((entry) => entry.beside);
    for (const part of parts) {
      for (const buffer of touched) part.buffers.add(buffer);
      part.calls.push(name);
    }
  };
  const backend = new Proxy(cpu, {
    get(target, property, receiver) {
      if (property === 'tail') {
        return (work: () => void) => {
          const tail: Touches = { buffers: new Set(), calls: [] };
          inTail = tail;
          try {
            work();
          } finally {
            inTail = undefined;
          }
          open.push({ tail, beside: { buffers: new Set(), calls: [] } });
        };
      }
      if (property === 'joinTail') return () => closed.push(...open.splice(0));
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result = value.apply(target, args);
        // A view queues nothing: it is host arithmetic on a buffer's address.
        if (property === 'allocate') allocated.add((result as { data: CpuBuffer }).data.buffer);
        else if (property !== 'view' && property !== 'viewRows') touch(String(property), args);
        return result;
      };
    },
  }) as unknown as Backend<CpuBuffer>;
  return { backend, hazards: () => [...closed, ...open] };
}

/**
 * Steps queued one ahead over lanes that end after different frame counts, as a server runs them: a lane is queued
 * one step past its end (its end is known only when its frames are read), released with that step in flight, and
 * its slot taken by the next request's lane.
 */
function serve(model: SlotSpeechModel<CpuBuffer>, lengths: readonly number[]): number[][][] {
  const frames: number[][][] = lengths.map(() => []);
  const live = new Map<Lane, { index: number; queued: number }>();
  let next = 0;
  let queued: { lanes: Lane[]; ticket: ReturnType<typeof model.enqueueStep> } | undefined;
  do {
    while (live.size < 2 && next < lengths.length) {
      const made = model.newLane({ ...DEFAULT_SAMPLING, seed: 40 + next });
      const rows = mixedPrompt(model.candidates.semanticBegin, 9 + 5 * next, next);
      model.prefill(made, rows, 0, rows.tokens.length);
      live.set(made, { index: next++, queued: 0 });
    }
    const lanes = [...live].filter(([, state]) => state.queued <= lengths[state.index]!).map(([lane]) => lane);
    for (const lane of lanes) live.get(lane)!.queued += 1;
    const ahead = lanes.length > 0 ? { lanes, ticket: model.enqueueStep(lanes) } : undefined;
    if (queued !== undefined) {
      const outcomes: FrameOutcome[] = model.collectStep(queued.ticket);
      queued.lanes.forEach((lane, b) => {
        const state = live.get(lane);
        if (state === undefined || frames[state.index]!.length === lengths[state.index]) return;
        const outcome = outcomes[b]!;
        frames[state.index]!.push(outcome.end ? [-1] : Array.from(outcome.frame));
        if (frames[state.index]!.length === lengths[state.index]) {
          model.release(lane);
          live.delete(lane);
        }
      });
    }
    queued = ahead;
  } while (queued !== undefined || live.size > 0);
  return frames;
}

const plain = await loadTinyModel({ capacity: CAPACITY });
const hazard = hazardBackend();
const wrapped = await loadSpeechModel(await tinyCheckpointDir(), hazard.backend, { capacity: CAPACITY });

test('the tail starts after the layer that draws the code the next step embeds', () => {
  const model = plain;
  const { tower } = model;
  const shared = model.config.tower.sharedLayers;
  assert.equal(tower.tailFrom(0), 0);
  assert.equal(tower.tailFrom(1), shared + 1);
  assert.equal(tower.tailFrom(2), shared + 2);
  assert.equal(tower.tailFrom(model.config.audio.codebooks - 1), tower.layers.length);
});

test('no buffer a step tail touches is touched by the work queued beside it, and the frames are the cpu model’s', () => {
  const { hazards } = hazard;
  const lengths = [3, 5, 2, 4];
  const served = serve(wrapped, lengths);
  assert.deepEqual(served, serve(plain, lengths));
  assert.deepEqual(
    served.map((lane) => lane.length),
    lengths,
  );
  const found = hazards();
  assert.ok(found.length >= 10, `only ${found.length} tails were queued`);
  assert.ok(
    found.some(({ beside }) => beside.calls.includes('linear')),
    'no step head ran beside a tail',
  );
  const rasWindow = (wrapped as unknown as { lanes: { planned: { slabs: { rasWindow: { data: CpuBuffer } } } } }).lanes
    .planned.slabs.rasWindow.data.buffer;
  for (const { tail, beside } of found) {
    const shared = [...tail.buffers].filter((buffer) => beside.buffers.has(buffer) && buffer !== rasWindow);
    assert.equal(
      shared.length,
      0,
      `a tail (${[...new Set(tail.calls)].join(', ')}) shares ${shared.length} buffers with ${[...new Set(beside.calls)].join(', ')}`,
    );
  }
});
