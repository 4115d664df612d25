// The contract's parts (support/contract-part.ts) are disjoint, hold every case together, and refuse malformed input.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contractPart, inPart, partLabel, WHOLE_CONTRACT } from './support/contract-part.ts';

test('absent or empty is the whole contract', () => {
  assert.deepEqual(contractPart(undefined), WHOLE_CONTRACT);
  assert.deepEqual(contractPart(''), WHOLE_CONTRACT);
  assert.equal(partLabel(WHOLE_CONTRACT), '');
});

test('n parts are disjoint and together hold every case once', () => {
  const cases = Array.from({ length: 23 }, (_, index) => `case ${index}`);
  for (const count of [1, 2, 4, 7, 30]) {
    const parts = Array.from({ length: count }, (_, index) => inPart(cases, contractPart(`${index}/${count}`)));
    assert.deepEqual(parts.flat().sort(), [...cases].sort(), `${count} parts`);
  }
  assert.deepEqual(inPart(cases, contractPart('1/4')), ['case 1', 'case 5', 'case 9', 'case 13', 'case 17', 'case 21']);
  assert.equal(partLabel(contractPart('3/4')), 'part 3 of 4');
});

test('malformed parts are refused by name', () => {
  for (const text of ['4/4', '1/0', '-1/4', '1', 'a/b', '1/4/2', ' 1/4']) {
    assert.throws(() => contractPart(text), /DRAMA3_CONTRACT_PART must be i\/n/, text);
  }
});
