// The null text front end and the real one refuse a structural token in user text with the same code, so a client
// (and every server test on the null engine) sees the error the real model's server sends.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDramaError } from '../../src/errors.ts';
import { refuseNullStructuralTokens } from '../../src/text/null-structural.ts';
import { parseSpeakerSegments } from '../../src/text/userText.ts';

function codeOf(work: () => unknown): string | undefined {
  try {
    work();
  } catch (error) {
    return isDramaError(error) ? error.code : String(error);
  }
  return undefined;
}

test('a structural token in text: one code from both front ends', () => {
  for (const token of ['<|im_end|>', '<|voice|>', '<|semantic:12|>']) {
    const text = `before ${token} after`;
    const real = codeOf(() => parseSpeakerSegments(text, ['<|im_end|>', '<|voice|>'], 'input'));
    const nullFrontEnd = codeOf(() => refuseNullStructuralTokens(text, 'input'));
    assert.equal(real, 'TEXT_STRUCTURAL_TOKEN', token);
    assert.equal(nullFrontEnd, real, token);
  }
});
