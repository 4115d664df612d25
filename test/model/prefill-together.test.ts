// Several lanes prefilled together (SpeechModel.prefillTogether): one backbone and tower call over all their rows,
// each lane one sequence of the call, cut into calls of the model's prefill chunk wherever a call fills up. Each lane
// must draw exactly the frames it draws when prefilled alone (contracts 2 and 3: a row that read a neighbour's slot,
// a record, a code or a sequence entry of the wrong lane would change them), and a bad part refuses the whole
// prefill before any row runs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DramaError } from '../../src/errors.ts';
import { generateFrames } from '../../src/model/generate.ts';
import { DEFAULT_SAMPLING, type Lane, type PromptRows, type SamplingSettings } from '../../src/model/types.ts';
import { CODES_PER_FRAME } from '../../src/shared/frame.ts';
import { loadTinyModel, mixedPrompt } from './tiny-checkpoint.ts';

// A chunk of 16 rows cuts most lanes across calls and packs the short ones several to a call.
const model = await loadTinyModel({ capacity: { lanes: 8, rowsPerLane: 128 }, prefillChunk: 16 });
const FRAMES = 6;

function prompt(length: number, salt: number): PromptRows {
  return mixedPrompt(model.candidates.semanticBegin, length, salt);
}

interface Request {
  readonly rows: PromptRows;
  readonly sampling: SamplingSettings;
}

const requests: Request[] = [2, 21, 5, 40, 16, 33, 9, 17].map((length, index) => ({
  rows: prompt(length, index),
  sampling: { ...DEFAULT_SAMPLING, seed: 500 + index * 29, topK: [30, 0, 7][index % 3]! },
}));

function alone(request: Request): number[][] {
  const result = generateFrames(model, request.rows, {
    sampling: request.sampling,
    maxFrames: FRAMES,
    prefillChunk: 64,
  });
  return result.frames.map((frame) => Array.from(frame));
}

/** Prefills every lane together through `cuts` (row fractions of each prompt), then steps them together. */
function together(group: readonly Request[], cuts: readonly number[]): number[][][] {
  const lanes = group.map((request) => model.newLane(request.sampling));
  try {
    let from = group.map(() => 0);
    for (const cut of [...cuts, 1]) {
      const to = group.map((request, index) => Math.max(from[index]!, Math.round(request.rows.tokens.length * cut)));
      model.prefillTogether(
        group.map((request, index) => ({
          lane: lanes[index]!,
          rows: request.rows,
          from: from[index]!,
          to: to[index]!,
        })),
      );
      from = to;
    }
    const drawn: number[][][] = group.map(() => []);
    let live = lanes.map((_, index) => index);
    for (let frame = 0; frame < FRAMES && live.length > 0; frame++) {
      const outcomes = model.step(live.map((index) => lanes[index]!));
      const ended: number[] = [];
      outcomes.forEach((outcome, position) => {
        if (outcome.end) ended.push(live[position]!);
        else drawn[live[position]!]!.push(Array.from(outcome.frame));
      });
      live = live.filter((index) => !ended.includes(index));
    }
    return drawn;
  } finally {
    for (const lane of lanes) model.release(lane);
  }
}

const expected = requests.map(alone);

test('the requests alone draw frames, and not all the same ones', () => {
  assert.ok(expected.every((frames) => frames.length > 0));
  assert.notDeepEqual(expected[1], expected[3]);
});

for (const [name, cuts] of [
  ['whole prompts in one prefill', []],
  ['prompts cut at a third and at two thirds', [1 / 3, 2 / 3]],
  ['all but the last row, then the last row alone', [0.999]],
] as const) {
  test(`8 lanes prefilled together (${name}) draw the frames each draws alone`, () => {
    const drawn = together(requests, cuts);
    drawn.forEach((frames, index) => {
      assert.deepEqual(frames, expected[index], `request ${index}`);
    });
  });
}

test('a lane prefilled together with others at different rows draws its frames alone', () => {
  // Requests 3 and 5 start before the others join, so the joint call holds lanes at different positions.
  const lanes = requests.map((request) => model.newLane(request.sampling));
  try {
    model.prefillTogether(
      [3, 5].map((index) => ({ lane: lanes[index]!, rows: requests[index]!.rows, from: 0, to: 11 })),
    );
    model.prefillTogether(
      requests.map((request, index) => ({
        lane: lanes[index]!,
        rows: request.rows,
        from: index === 3 || index === 5 ? 11 : 0,
        to: request.rows.tokens.length,
      })),
    );
    const outcomes = model.step(lanes);
    outcomes.forEach((outcome, index) => {
      assert.equal(outcome.end, false);
      if (!outcome.end) assert.deepEqual(Array.from(outcome.frame), expected[index]![0], `request ${index}`);
    });
  } finally {
    for (const lane of lanes) model.release(lane);
  }
});

function refusedWhole(make: (lanes: Lane[]) => Parameters<typeof model.prefillTogether>[0], code: string): void {
  const lanes = requests.slice(0, 3).map((request) => model.newLane(request.sampling));
  try {
    assert.throws(
      () => model.prefillTogether(make(lanes)),
      (error: unknown) => error instanceof DramaError && error.code === code,
    );
    // Nothing ran: every lane still starts at row 0 and prefills and steps as if new.
    assert.deepEqual(
      lanes.map((lane) => lane.position),
      [0, 0, 0],
    );
    model.prefillTogether(
      lanes.map((lane, index) => ({
        lane,
        rows: requests[index]!.rows,
        from: 0,
        to: requests[index]!.rows.tokens.length,
      })),
    );
    const outcomes = model.step(lanes);
    outcomes.forEach((outcome, index) => {
      if (!outcome.end) assert.deepEqual(Array.from(outcome.frame), expected[index]![0]);
    });
  } finally {
    for (const lane of lanes) model.release(lane);
  }
}

test('a lane named twice refuses the whole prefill before any row runs', () => {
  refusedWhole(
    (lanes) => [
      { lane: lanes[0]!, rows: requests[0]!.rows, from: 0, to: 1 },
      { lane: lanes[1]!, rows: requests[1]!.rows, from: 0, to: 4 },
      { lane: lanes[0]!, rows: requests[0]!.rows, from: 1, to: 2 },
    ],
    'PREFILL_LANE_REPEATED',
  );
});

test('a part that does not continue its lane refuses the whole prefill before any row runs', () => {
  refusedWhole(
    (lanes) => [
      { lane: lanes[0]!, rows: requests[0]!.rows, from: 0, to: 2 },
      { lane: lanes[1]!, rows: requests[1]!.rows, from: 0, to: 21 },
      { lane: lanes[2]!, rows: requests[2]!.rows, from: 3, to: 5 },
    ],
    'PREFILL_OUT_OF_ORDER',
  );
});

test('prompt rows run the tower with the codes of the row after them, not their own', () => {
  // Two prompts that differ only in their last row (a text row in one, a code row in the other): no backbone row reads
  // it (the last row is the first step's pending row), but the tower's last prefilled row reads its codes, so the
  // tower's K/V must differ and the backbone's must not.
  const first = prompt(21, 11);
  const codes = first.codes.slice();
  for (let k = 0; k < CODES_PER_FRAME; k++) codes[20 * CODES_PER_FRAME + k] = 3 + k;
  const tokens = first.tokens.slice();
  tokens[20] = model.candidates.semanticBegin + 3;
  const second: PromptRows = { ...first, tokens, codes };
  const lanes = [first, second].map(() => model.newLane(DEFAULT_SAMPLING));
  try {
    model.prefillTogether([first, second].map((rows, index) => ({ lane: lanes[index]!, rows, from: 0, to: 21 })));
    const [a, b] = lanes.map((lane) =>
      model.snapshot(lane).parts.map((part) => model.backend.toHost(part.data, 0, elements(part.shape))),
    );
    const backboneParts = 2 * model.backbone.layers.filter((layer) => layer.attention !== undefined).length;
    const towerParts = 2 * model.tower.layers.length;
    for (let part = 0; part < backboneParts; part++) assert.deepEqual(a![part], b![part], `backbone K/V part ${part}`);
    for (let part = backboneParts; part < backboneParts + towerParts; part++) {
      assert.notDeepEqual(a![part], b![part], `tower K/V part ${part}`);
    }
  } finally {
    for (const lane of lanes) model.release(lane);
  }
});

function elements(shape: readonly number[]): number {
  return shape.reduce((product, size) => product * size, 1);
}
