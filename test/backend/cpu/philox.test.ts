// Philox 4x32-10 against the known-answer vectors published with Random123 (kat_vectors).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { philox4x32 } from '../../../src/backend/cpu/ops/philox.ts';

const hex = (words: Uint32Array) => [...words].map((word) => word.toString(16).padStart(8, '0'));

test('philox4x32-10 known answers', () => {
  const out = new Uint32Array(4);
  philox4x32(0, 0, 0, 0, 0, 0, out);
  assert.deepEqual(hex(out), ['6627e8d5', 'e169c58d', 'bc57ac4c', '9b00dbd8']);
  philox4x32(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, out);
  assert.deepEqual(hex(out), ['408f276d', '41c83b0e', 'a20bc7c6', '6d5451fd']);
  philox4x32(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, out);
  assert.deepEqual(hex(out), ['d16cfe09', '94fdcceb', '5001e420', '24126ea1']);
});
