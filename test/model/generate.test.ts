// generateFrames over a model with no arithmetic: finish reasons, the frame budget, chunked prefill calls.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NullSpeechModel } from '../../src/engine/null-model.ts';
import { generateFrames } from '../../src/model/generate.ts';
import { DEFAULT_SAMPLING, type PromptRows } from '../../src/model/types.ts';

const rows: PromptRows = { tokens: new Int32Array(10).fill(5), codes: new Int32Array(100).fill(-1), referenceRows: 0 };

test('end of speech finishes with stop; a budget reached first finishes with length', () => {
  const model = new NullSpeechModel({ framesPerRow: 0.5 });
  const stopped = generateFrames(model, rows, { sampling: DEFAULT_SAMPLING, maxFrames: 100, prefillChunk: 3 });
  assert.equal(stopped.finishReason, 'stop');
  assert.ok(stopped.frames.length > 0 && stopped.frames.length < 100);
  const clipped = generateFrames(model, rows, { sampling: DEFAULT_SAMPLING, maxFrames: 2, prefillChunk: 3 });
  assert.equal(clipped.finishReason, 'length');
  assert.deepEqual(clipped.frames, stopped.frames.slice(0, 2));
  assert.equal(model.liveLanes, 0);
});

test('a budget past the context is refused by name', () => {
  const model = new NullSpeechModel({ contextRows: 20 });
  assert.throws(() => generateFrames(model, rows, { sampling: DEFAULT_SAMPLING, maxFrames: 10, prefillChunk: 4 }), {
    code: 'CONTEXT_EXCEEDED',
  });
  assert.throws(() => generateFrames(model, rows, { sampling: DEFAULT_SAMPLING, maxFrames: 5, prefillChunk: 0 }), {
    code: 'PREFILL_CHUNK_INVALID',
  });
});
