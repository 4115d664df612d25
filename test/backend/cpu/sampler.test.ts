// The sampler: top-k and top-p cut-offs, the exponential race's frequencies, RAS redraws at window entry frame mod 16,
// greedy; the per-draw function (ops/sampling.ts) and the batched op over a lane table (the backend's sampleMain).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CpuBackend } from '../../../src/backend/cpu/backend.ts';
import { argmaxLogits, drawFromLogits, drawScratch } from '../../../src/backend/cpu/ops/sampling.ts';
import { LANE_ENTRY, RAS_WINDOW } from '../../../src/backend/types.ts';
import { float32Bits } from '../../../src/numeric/dtypes.ts';

const logitsOf = (probabilities: number[]) => Float64Array.from(probabilities, Math.log);
const key = (seed: number, frame: number, column: number) => ({ seedLow: seed, seedHigh: 0, frame, column, draw: 0 });

function draw(logits: Float64Array, settings: { topK: number; topP: number }, seed: number, frame: number, column = 1) {
  const { topK, topP } = settings;
  return drawFromLogits(
    logits,
    0,
    logits.length,
    { temperature: 1, topP, topK },
    key(seed, frame, column),
    drawScratch(64),
  );
}

test('top-k 1 and a tiny top-p both leave only the most probable candidate', () => {
  const logits = logitsOf([0.1, 0.4, 0.3, 0.2]);
  for (let seed = 0; seed < 20; seed++) {
    assert.equal(draw(logits, { topK: 1, topP: 1 }, seed, 0), 1);
    assert.equal(draw(logits, { topK: 0, topP: 1e-6 }, seed, 0), 1);
  }
});

test('the race draws in proportion to the probabilities; top-p 0.7 drops the tail', () => {
  const logits = logitsOf([0.5, 0.3, 0.2]);
  const counts = [0, 0, 0];
  const cut = [0, 0, 0];
  const draws = 20000;
  for (let frame = 0; frame < draws; frame++) {
    counts[draw(logits, { topK: 0, topP: 1 }, 9, frame)]! += 1;
    cut[draw(logits, { topK: 0, topP: 0.7 }, 9, frame)]! += 1;
  }
  [0.5, 0.3, 0.2].forEach((p, index) => {
    assert.ok(Math.abs(counts[index]! / draws - p) < 0.015, `candidate ${index}: ${counts[index]! / draws}`);
  });
  assert.equal(cut[2], 0);
  assert.ok(Math.abs(cut[0]! / draws - 0.625) < 0.015, `top-p renormalised: ${cut[0]! / draws}`);
});

test('draws depend only on (seed, frame, column)', () => {
  const logits = logitsOf(Array.from({ length: 50 }, () => 0.02));
  const settings = { topK: 30, topP: 0.9 };
  const columns = [3, 1, 7];
  const forward = columns.map((column) => draw(logits, settings, 5, 12, column));
  const backward = columns.toReversed().map((column) => draw(logits, settings, 5, 12, column));
  assert.deepEqual(forward, backward.toReversed());
  assert.notDeepEqual(
    [1, 2, 3, 4, 5].map((column) => draw(logits, settings, 5, 12, column)),
    [1, 2, 3, 4, 5].map((column) => draw(logits, settings, 5, 13, column)),
  );
});

/** Runs the backend's main draw for one lane in slot 1 over `frames` frames; returns the picks. */
function mainDraws(logits: Float64Array, semantic: number, frames: number, greedy = false): number[] {
  const backend = new CpuBackend({ precision: 'fp32' });
  const count = logits.length;
  const lanes = backend.allocate('i32', [1, LANE_ENTRY]);
  const rasWindow = backend.allocate('i32', [2, RAS_WINDOW]);
  backend.fillSlot(rasWindow, 0, -1);
  backend.fillSlot(rasWindow, 1, -1);
  const candidates = backend.fromHost(
    'i32',
    [count],
    Int32Array.from({ length: count }, (_, i) => 100 + i),
  );
  const records = backend.allocate('i32', [1, 11]);
  const picks: number[] = [];
  for (let frame = 0; frame < frames; frame++) {
    const entry = [1, 0, frame, 1, 0, float32Bits(0.05), float32Bits(1), 0, greedy ? 1 : 0];
    backend.writeIntegers(lanes, 0, Int32Array.from(entry));
    backend.sampleMain(
      Float32Array.from(logits),
      count,
      semantic,
      candidates,
      { lanes: lanes.data, rasWindow },
      records,
      1,
    );
    const [token, code] = records.data as Int32Array;
    assert.equal(token, 100 + (code! < 0 ? count - 1 : code!));
    picks.push(code!);
    if (!greedy && frame < RAS_WINDOW && code! >= 0)
      assert.equal((rasWindow.data as Int32Array)[RAS_WINDOW + frame], code);
  }
  assert.ok(
    (rasWindow.data as Int32Array).subarray(0, RAS_WINDOW).every((entry) => entry === -1),
    'slot 0 untouched',
  );
  return picks;
}

test('RAS redraws a semantic token repeated within the window, never the end token', () => {
  // At temperature 0.05 candidate 0 wins every normal draw; the RAS redraw (temperature 1.0) often does not.
  const logits = Float64Array.of(1.0, 0.95, 0.9, 0.85, 5.0);
  assert.ok(
    mainDraws(logits, 4, 3).every((code) => code === -1),
    'end is never redrawn',
  );
  const drawn = mainDraws(logits.subarray(0, 4), 4, 40);
  assert.equal(drawn[0], 0);
  assert.ok(drawn.filter((code) => code !== 0).length >= 10, `RAS redrew too rarely: ${drawn.join(',')}`);
});

test('greedy takes the argmax (lowest index on ties) everywhere', () => {
  const logits = Float64Array.of(0.1, 0.7, 0.7, 0.2);
  assert.equal(argmaxLogits(logits, 0, 4), 1);
  assert.equal(argmaxLogits(logits, 2, 2), 0);
  assert.ok(mainDraws(logits, 4, 20, true).every((code) => code === 1));
});
