// The sampler's one definition of a draw (the sampler kernel's reference): non-finite logits, the float32 settings
// the device's lane table holds, the RAS window's entry per frame, and the fixed summation order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  drawFromLogits,
  drawMain,
  drawScratch,
  fixedOrderSum,
  laneSampling,
  RAS_WINDOW,
  SUM_LANES,
} from '../../../src/backend/cpu/ops/sampling.ts';

const key = { seedLow: 7, seedHigh: 0, frame: 3, column: 1, draw: 0 };
const open = { temperature: 1, topP: 1, topK: 0 };

test('a NaN logit is never drawn; all −Inf draws 0; a +Inf logit draws the first +Inf', () => {
  const scratch = drawScratch(8);
  const withNaN = Float32Array.of(Number.NaN, 0, 0, 0);
  for (let frame = 0; frame < 200; frame++) {
    assert.notEqual(drawFromLogits(withNaN, 0, 4, open, { ...key, frame }, scratch), 0);
  }
  const none = new Float32Array(4).fill(Number.NEGATIVE_INFINITY);
  assert.equal(drawFromLogits(none, 0, 4, open, key, scratch), 0);
  const infinite = Float32Array.of(1, Number.POSITIVE_INFINITY, 2, Number.POSITIVE_INFINITY);
  assert.equal(drawFromLogits(infinite, 0, 4, open, key, scratch), 1);
});

test('temperature and top-p are held as float32, as the lane table holds them', () => {
  const lane = laneSampling({ seed: 2 ** 33 + 5, temperature: 0.7, topP: 0.9, topK: 30, greedy: false });
  assert.equal(lane.settings.temperature, Math.fround(0.7));
  assert.equal(lane.settings.topP, Math.fround(0.9));
  assert.equal(lane.seedLow, 5);
  assert.equal(lane.seedHigh, 2);
});

test('frame f writes its semantic pick into RAS window entry f mod 16; end of speech writes nothing', () => {
  const scratch = drawScratch(3);
  const lane = laneSampling({ seed: 1, temperature: 1, topP: 1, topK: 1, greedy: false });
  const window = new Int32Array(2 * RAS_WINDOW).fill(-1);
  const picksOne = Float32Array.of(0, 5, 0);
  assert.equal(drawMain(picksOne, 0, 3, 2, lane, 37, window, RAS_WINDOW, scratch), 1);
  assert.equal(window[RAS_WINDOW + (37 % RAS_WINDOW)], 1);
  assert.ok(
    window.subarray(0, RAS_WINDOW).every((entry) => entry === -1),
    'another slot untouched',
  );
  const picksEnd = Float32Array.of(0, 0, 5);
  const before = window.slice();
  assert.equal(drawMain(picksEnd, 0, 3, 2, lane, 38, window, RAS_WINDOW, scratch), 2);
  assert.deepEqual(window, before);
});

test('the normaliser adds strided lanes then halves: it differs from a left-to-right sum where order matters', () => {
  const count = 3 * SUM_LANES + 17;
  const values = new Float64Array(count);
  for (let i = 0; i < count; i++) values[i] = i % 2 === 0 ? 1e16 : 1 + i * 1e-3;
  let sequential = 0;
  for (let i = 0; i < count; i++) sequential += values[i]!;
  const partials = new Float64Array(SUM_LANES);
  let expected = 0;
  const lanes = new Float64Array(SUM_LANES);
  for (let lane = 0; lane < SUM_LANES; lane++) for (let i = lane; i < count; i += SUM_LANES) lanes[lane]! += values[i]!;
  for (let stride = SUM_LANES / 2; stride >= 1; stride /= 2)
    for (let lane = 0; lane < stride; lane++) lanes[lane]! += lanes[lane + stride]!;
  expected = lanes[0]!;
  assert.equal(fixedOrderSum(values, count, partials), expected);
  assert.notEqual(expected, sequential, 'the inputs must be order-sensitive for this test to mean anything');
});
