// Contract 3 made meaningful: each of 8 requests (different prompt lengths, seeds and settings) gives byte-identical
// frames served alone and served in batches of 2, 3, 5 and 8 lanes, where the lanes join at different rounds and so
// stand at different positions in every step. A row that read a neighbour's slot (K/V, DeltaNet state, RAS window or
// pending record) would change that lane's frames.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateFrames } from '../../src/model/generate.ts';
import { DEFAULT_SAMPLING, type PromptRows, type SamplingSettings } from '../../src/model/types.ts';
import { loadTinyModel, mixedPrompt } from './tiny-checkpoint.ts';

const model = await loadTinyModel({ capacity: { lanes: 8, rowsPerLane: 256 } });
const FRAMES = 8;
const CHUNK = 32;

function prompt(length: number, salt: number): PromptRows {
  return mixedPrompt(model.candidates.semanticBegin, length, salt);
}

interface Request {
  readonly rows: PromptRows;
  readonly sampling: SamplingSettings;
}

const requests: Request[] = [9, 23, 17, 40, 31, 56, 12, 47].map((length, index) => ({
  rows: prompt(length, index),
  sampling: {
    ...DEFAULT_SAMPLING,
    seed: 1000 + index * 17,
    topK: [30, 0, 5, 100][index % 4]!,
    greedy: index === 6,
  },
}));

/** Frames as lists, with −1 closing a lane that drew end of speech. */
type Drawn = number[][];

function alone(request: Request): Drawn {
  const result = generateFrames(model, request.rows, {
    sampling: request.sampling,
    maxFrames: FRAMES,
    prefillChunk: CHUNK,
  });
  const frames = result.frames.map((frame) => Array.from(frame));
  return result.finishReason === 'stop' ? [...frames, [-1]] : frames;
}

/** The requests batched: request j is prefilled and joins the step at round 2j, then leaves after FRAMES frames. */
function batched(group: readonly Request[]): Drawn[] {
  const lanes = group.map((request) => model.newLane(request.sampling));
  const drawn: Drawn[] = group.map(() => []);
  const active: number[] = [];
  const done = (index: number) => drawn[index]!.length >= FRAMES || drawn[index]!.at(-1)?.[0] === -1;
  for (let round = 0; active.length > 0 || round <= 2 * (group.length - 1); round++) {
    if (round % 2 === 0 && round / 2 < group.length) {
      const index = round / 2;
      const rows = group[index]!.rows;
      for (let from = 0; from < rows.tokens.length; from += CHUNK)
        model.prefill(lanes[index]!, rows, from, Math.min(rows.tokens.length, from + CHUNK));
      active.push(index);
    }
    if (active.length === 0) continue;
    const outcomes = model.step(active.map((index) => lanes[index]!));
    outcomes.forEach((outcome, position) => {
      drawn[active[position]!]!.push(outcome.end ? [-1] : Array.from(outcome.frame));
    });
    for (const index of active.filter(done)) active.splice(active.indexOf(index), 1);
  }
  for (const lane of lanes) model.release(lane);
  return drawn;
}

const expected = requests.map(alone);

test('every request alone draws frames (the comparison has something to compare)', () => {
  assert.ok(expected.every((frames) => frames.length > 0));
  assert.notDeepEqual(expected[0], expected[1]);
});

for (const size of [2, 3, 5, 8]) {
  test(`each request in a batch of ${size} lanes at different positions gives its frames alone`, () => {
    for (let first = 0; first < requests.length; first += size) {
      const members = Array.from({ length: size }, (_, offset) => (first + offset) % requests.length);
      const results = batched(members.map((index) => requests[index]!));
      members.forEach((index, position) => {
        assert.deepEqual(results[position], expected[index], `request ${index} in a batch of ${size}`);
      });
    }
  });
}
