// plan/run: after plan, prefill chunks and frame steps allocate nothing (every backend allocation and scratch growth
// is counted by the backend), for any batch up to the planned lanes; a step past the plan is refused by name.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_SAMPLING } from '../../src/model/types.ts';
import { loadTinyModel, samplePrompt } from './tiny-checkpoint.ts';

const model = await loadTinyModel({ prefillChunk: 32, capacity: { lanes: 4, rowsPerLane: 256 } });
const prompt = samplePrompt(model.candidates.semanticBegin);

test('prefill and frame steps after plan make zero allocations, at every batch size up to the plan', () => {
  const lanes = [0, 1, 2, 3].map((index) =>
    model.newLane({ ...DEFAULT_SAMPLING, seed: index, topK: [30, 0, 5, 80][index]! }),
  );
  const before = model.backend.allocations;
  for (const lane of lanes) {
    for (let from = 0; from < prompt.tokens.length; from += 7)
      model.prefill(lane, prompt, from, Math.min(prompt.tokens.length, from + 7));
  }
  const afterPrefill = model.backend.allocations;
  for (let round = 0; round < 6; round++) model.step(lanes.slice(0, 1 + (round % 4)));
  const afterSteps = model.backend.allocations;
  for (const lane of lanes) model.release(lane);
  assert.equal(afterPrefill - before, 0, 'prefill allocated');
  assert.equal(afterSteps - afterPrefill, 0, 'steps allocated');
});

test('a fifth lane or a batch past the plan is refused by name', () => {
  const lanes = [0, 1, 2, 3].map((seed) => model.newLane({ ...DEFAULT_SAMPLING, seed }));
  assert.throws(() => model.newLane(DEFAULT_SAMPLING), { code: 'LANES_EXHAUSTED' });
  for (const lane of lanes) model.release(lane);
  assert.throws(() => model.plan({ lanes: 0, rowsPerLane: 10 }), { code: 'LANE_CAPACITY_INVALID' });
  const live = model.newLane(DEFAULT_SAMPLING);
  assert.throws(() => model.plan({ lanes: 2, rowsPerLane: 128 }), { code: 'PLAN_WITH_LIVE_LANES' });
  model.release(live);
});
