// The frame sampler: top-k and top-p cut-offs, the exponential race's frequencies, RAS redraws, greedy.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { argmaxLogits } from '../../src/backend/cpu/ops/sampling.ts';
import { FrameSampler } from '../../src/model/sampler.ts';
import { DEFAULT_SAMPLING } from '../../src/model/types.ts';

const logitsOf = (probabilities: number[]) => Float64Array.from(probabilities, Math.log);

test('top-k 1 and a tiny top-p both leave only the most probable candidate', () => {
  const logits = logitsOf([0.1, 0.4, 0.3, 0.2]);
  for (let seed = 0; seed < 20; seed++) {
    assert.equal(new FrameSampler({ ...DEFAULT_SAMPLING, seed, topK: 1, topP: 1 }, 4).drawCode(logits, 4, 0, 1), 1);
    assert.equal(new FrameSampler({ ...DEFAULT_SAMPLING, seed, topK: 0, topP: 1e-6 }, 4).drawCode(logits, 4, 0, 1), 1);
  }
});

test('the race draws in proportion to the probabilities; top-p 0.7 drops the tail', () => {
  const logits = logitsOf([0.5, 0.3, 0.2]);
  const counts = [0, 0, 0];
  const cut = [0, 0, 0];
  const sampler = new FrameSampler({ ...DEFAULT_SAMPLING, seed: 9, topK: 0, topP: 1 }, 3);
  const cutSampler = new FrameSampler({ ...DEFAULT_SAMPLING, seed: 9, topK: 0, topP: 0.7 }, 3);
  const draws = 20000;
  for (let frame = 0; frame < draws; frame++) {
    counts[sampler.drawCode(logits, 3, frame, 1)]! += 1;
    cut[cutSampler.drawCode(logits, 3, frame, 1)]! += 1;
  }
  [0.5, 0.3, 0.2].forEach((p, index) => {
    assert.ok(Math.abs(counts[index]! / draws - p) < 0.015, `candidate ${index}: ${counts[index]! / draws}`);
  });
  assert.equal(cut[2], 0);
  assert.ok(Math.abs(cut[0]! / draws - 0.625) < 0.015, `top-p renormalised: ${cut[0]! / draws}`);
});

test('draws depend only on (seed, frame, column)', () => {
  const logits = logitsOf(Array.from({ length: 50 }, () => 0.02));
  const a = new FrameSampler({ ...DEFAULT_SAMPLING, seed: 5 }, 50);
  const b = new FrameSampler({ ...DEFAULT_SAMPLING, seed: 5 }, 50);
  const columns = [3, 1, 7];
  const forward = columns.map((column) => a.drawCode(logits, 50, 12, column));
  const backward = columns.toReversed().map((column) => b.drawCode(logits, 50, 12, column));
  assert.deepEqual(forward, backward.toReversed());
  assert.notDeepEqual(
    [1, 2, 3, 4, 5].map((column) => a.drawCode(logits, 50, 12, column)),
    [1, 2, 3, 4, 5].map((column) => a.drawCode(logits, 50, 13, column)),
  );
});

test('RAS redraws a semantic token repeated within the window, never the end token', () => {
  // At temperature 0.05 candidate 0 wins every normal draw; the RAS redraw (temperature 1.0) often does not.
  const logits = Float64Array.of(1.0, 0.95, 0.9, 0.85, 5.0);
  const semantic = 4;
  const settings = { ...DEFAULT_SAMPLING, seed: 1, temperature: 0.05, topP: 1, topK: 0 };
  const withEnd = new FrameSampler(settings, 5);
  assert.ok(
    [0, 1, 2].every((frame) => withEnd.drawMain(logits, 5, semantic, frame) === 4),
    'end is never redrawn',
  );
  const sampler = new FrameSampler(settings, 5);
  const drawn = Array.from({ length: 40 }, (_, frame) => sampler.drawMain(logits, 4, semantic, frame));
  assert.equal(drawn[0], 0);
  assert.ok(drawn.filter((code) => code !== 0).length >= 10, `RAS redrew too rarely: ${drawn.join(',')}`);
});

test('greedy takes the argmax (lowest index on ties) everywhere', () => {
  const sampler = new FrameSampler({ ...DEFAULT_SAMPLING, greedy: true }, 4);
  const logits = Float64Array.of(0.1, 0.7, 0.7, 0.2);
  assert.equal(argmaxLogits(logits, 0, 4), 1);
  for (let frame = 0; frame < 20; frame++) assert.equal(sampler.drawMain(logits, 4, 4, frame), 1);
  assert.equal(sampler.drawCode(logits, 4, 0, 3), 1);
});
