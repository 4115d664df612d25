// The frame bench prints the PyTorch baseline measured in the same device call when bench/pytorch-frames.py left
// its JSON beside it: batch 1 at the faster of its two experts forms, batch 64 as frames/s of 64 lanes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { measuredBaseline } from '../../bench/support/frames-report.ts';

test('the measured baseline takes the faster batch-1 experts form and converts steps to frames/s', () => {
  const baseline = measuredBaseline({
    torch: '2.11.0',
    fla: '0.5.2',
    decode_ms_batch1_batched_mm: 149.7,
    decode_ms_batch1_grouped_mm: 85.1,
    decode_ms_batch64_grouped_mm: 128,
    prefill_rows_per_s_4096: 23082,
  });
  assert.deepEqual(baseline.batch1, { milliseconds: 85.1, framesPerSecond: 1000 / 85.1, experts: 'grouped_mm' });
  assert.equal(baseline.batch64.framesPerSecond, 500);
  assert.equal(baseline.prefillRowsPerSecond, 23082);
  assert.match(baseline.measured, /this run, torch 2\.11\.0, fla 0\.5\.2/);
});
