// The contract's per-element ulp gate, without a GPU: the spacing of bf16 and fp32 values, the floor for results
// that cancel to near zero, and the report of the first elements over the bound.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bf16BitsToFloat32, float32ToBf16Bits } from '../../src/numeric/dtypes.ts';
import { compareUlps, ulpAt } from './support/ulps.ts';

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
