// The contract's per-element ulp gate, without a GPU: the spacing of bf16 and fp32 values, the floor for results
// that cancel to near zero, the pair norm a rotation's outputs are counted at, and the report of the first elements
// over the bound.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyRope } from '../../src/backend/cpu/ops/rope.ts';
import { bf16BitsToFloat32, float32ToBf16Bits, roundToBf16 } from '../../src/numeric/dtypes.ts';
import { compareUlps, offBf16Grid, rotatedPairMagnitudes, ulpAt } from './support/ulps.ts';

test('the ulp is the spacing of the dtype at the magnitude, also at powers of two', () => {
  assert.equal(ulpAt('bf16', 1), 2 ** -7);
  assert.equal(ulpAt('bf16', 1.999), 2 ** -7);
  assert.equal(ulpAt('bf16', 2), 2 ** -6);
  assert.equal(ulpAt('bf16', 0.75), 2 ** -8);
  assert.equal(ulpAt('f32', 1), 2 ** -23);
  assert.equal(ulpAt('f32', 2 ** -130), 2 ** -149);
  assert.equal(ulpAt('bf16', 0), 2 ** -133);
});

test('one rounding to bf16 stays within one ulp; the next value over is reported', () => {
  const exact = Float64Array.from([1.00390625 + 2 ** -12, -3.3, 1e-3, 0]);
  const rounded = exact.map((value) => bf16BitsToFloat32(float32ToBf16Bits(value)));
  const within = compareUlps('out', 'bf16', rounded, exact, 1);
  assert.equal(within.over, 0);
  assert.ok(within.worst <= 0.5 + 1e-9, `one rounding is at most half an ulp, got ${within.worst}`);
  const off = Float64Array.from(rounded);
  off[1] = off[1]! - 2 * 2 ** -6;
  const beyond = compareUlps('out', 'bf16', off, exact, 1);
  assert.equal(beyond.over, 1);
  assert.match(beyond.examples[0]!, /^out\[1\] actual -3\.3\d* expected -3\.3 \(\d\.\d\d ulps, bound 1\)$/);
});

test('a reference that cancels to near zero is judged at the floor, a non-finite mismatch is infinite', () => {
  const expected = Float64Array.from([1, -1, 1, 1e-9]);
  const actual = Float64Array.from([1, -1, 1, 1e-9 + 2 ** -16]);
  // At the floor (1/256 of the RMS ≈ 0.0034), 2⁻¹⁶ is under one bf16 ulp (2⁻¹⁶); at 1e-9 it would be millions.
  assert.equal(compareUlps('out', 'bf16', actual, expected, 1).over, 0);
  assert.equal(compareUlps('out', 'bf16', actual, expected, 1, 2 ** -20).over, 1);
  const nan = compareUlps('out', 'bf16', Float64Array.from([Number.NaN, 1]), Float64Array.from([1, 1]), 1000);
  assert.equal(nan.worst, Number.POSITIVE_INFINITY);
  assert.equal(nan.over, 1);
});

// One head as attention prepare writes it: normed values (bf16), NeoX RoPE on the first 4 of 8 dims, rounded to bf16.
const HEAD = [0.75, 0.3, 0.6, -0.2, 0.9, -0.45, 0.33, 0.1].map(roundToBf16);
const THETA = 1e7;

function rotated(head: readonly number[], position: number, theta = THETA): Float64Array {
  const out = Float64Array.from(head);
  applyRope(out, 1, 1, 8, 4, [position], theta, 'neox');
  return out.map(roundToBf16);
}

/** The first position from 1000 where the first rotated element cancels to 2–6 % of its pair norm (H200 case: 4 %). */
function cancellingPosition(): number {
  const norm = Math.hypot(HEAD[0]!, HEAD[2]!);
  for (let position = 1000; position < 10000; position++) {
    const ratio = Math.abs(rotated(HEAD, position)[0]!) / norm;
    if (ratio > 0.02 && ratio < 0.06) return position;
  }
  throw new Error('no cancelling position');
}

test('a 1-ulp input flip rotated where the terms cancel is many ulps of the output, within 2 at its pair norm', () => {
  const position = cancellingPosition();
  const expected = rotated(HEAD, position);
  const flipped = [...HEAD];
  flipped[0] = flipped[0]! + ulpAt('bf16', flipped[0]!);
  const actual = rotated(flipped, position);
  const pairs = rotatedPairMagnitudes(expected, 8, 4, 'neox');
  const ownUnit = compareUlps('q', 'bf16', actual, expected, 2);
  assert.ok(ownUnit.worst > 4, `the output's own ulp counts the flip as ${ownUnit.worst} ulps`);
  assert.equal(ownUnit.over, 1);
  const pairUnit = compareUlps('q', 'bf16', actual, expected, 2, undefined, pairs);
  assert.equal(pairUnit.over, 0, pairUnit.examples.join('; '));
  assert.ok(pairUnit.worst <= 1.5, `at the pair norm the flip is ${pairUnit.worst} ulps`);
  // The pass-through dims are counted at their own size: a copy three ulps off still fails.
  const passThrough = Float64Array.from(expected);
  passThrough[5] = passThrough[5]! + 3 * ulpAt('bf16', Math.abs(passThrough[5]!));
  assert.equal(compareUlps('q', 'bf16', passThrough, expected, 2, undefined, pairs).over, 1);
});

test('at the pair norm a position off by one, a wrong angle or a wrong direction still fails', () => {
  const position = cancellingPosition();
  const expected = rotated(HEAD, position);
  const pairs = rotatedPairMagnitudes(expected, 8, 4, 'neox');
  const judged = (actual: Float64Array) => compareUlps('q', 'bf16', actual, expected, 2, undefined, pairs);
  assert.ok(judged(rotated(HEAD, position + 1)).over >= 2, 'one position later');
  assert.ok(judged(rotated(HEAD, position, 1e6)).over >= 2, 'theta 1e6 instead of 1e7');
  assert.ok(judged(rotated(HEAD, -position)).over >= 2, 'rotated the other way');
});

test('an fp32 output held as bf16 values is checked for values off the bf16 grid, non-finite ones aside', () => {
  const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
  const inputs = [-2.5, -0.3, 0, 0.7, 3.1];
  const rounded = Float64Array.from(inputs, (x) => roundToBf16(sigmoid(x)));
  assert.equal(offBf16Grid('beta', Float64Array.of(...rounded, Number.NaN, Number.POSITIVE_INFINITY)).count, 0);
  // Left in fp32, every one but sigmoid(0) = 0.5 is off the grid, while within beta's bound of one bf16 ulp.
  const unrounded = Float64Array.from(inputs, (x) => Math.fround(sigmoid(x)));
  const off = offBf16Grid('beta', unrounded);
  assert.equal(off.count, 4);
  assert.match(off.examples[0]!, /^beta\[0\] = 0\.0758/);
  assert.equal(compareUlps('beta', 'f32', unrounded, rounded, 2 ** 16).over, 0);
});
