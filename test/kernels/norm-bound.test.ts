// The contract's norm gate for bf16 outputs of one rounding, without a GPU: its 2.2e-3 is the RMS of one rounding
// over many elements, so an output of a few elements is held to the worst case of correct rounding (2^-8) instead;
// a wrong value still fails, and large outputs keep the statistical bound.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { roundToBf16 } from '../../src/numeric/dtypes.ts';
import { BF16_ONE_ROUNDING_BOUND, BF16_UNIT_ROUNDOFF, normBound } from './support/contract.ts';

function relativeNorm(actual: readonly number[], expected: readonly number[]): number {
  let error = 0;
  let reference = 0;
  expected.forEach((value, index) => {
    error += (actual[index]! - value) ** 2;
    reference += value ** 2;
  });
  return Math.sqrt(error / reference);
}

test('15 correctly rounded values can be 3.9e-3 off in norm: over the statistical bound, within the worst case', () => {
  const expected = Array.from({ length: 15 }, (_, index) => (1 + 0.99 * 2 ** -8) * 2 ** (index % 3));
  const rounded = expected.map(roundToBf16);
  const error = relativeNorm(rounded, expected);
  assert.ok(error > BF16_ONE_ROUNDING_BOUND, `error ${error}`);
  assert.ok(error <= normBound(BF16_ONE_ROUNDING_BOUND, expected.length), `error ${error}`);
  const oneUlpOff = rounded.map((value) => value * (1 + 2 ** -7));
  assert.ok(relativeNorm(oneUlpOff, expected) > normBound(BF16_ONE_ROUNDING_BOUND, expected.length));
});

test('large outputs and other bounds keep their own bound', () => {
  assert.equal(normBound(BF16_ONE_ROUNDING_BOUND, 15), BF16_UNIT_ROUNDOFF);
  assert.equal(normBound(BF16_ONE_ROUNDING_BOUND, 256), BF16_ONE_ROUNDING_BOUND);
  assert.equal(normBound(2e-5, 15), 2e-5);
});
