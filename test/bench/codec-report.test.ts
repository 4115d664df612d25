// The codec bench prints each row's TFLOP/s as a share of the dense GEMM rate of the same run, and PyTorch's decode at
// the same precision and lane count: from pytorch-codec.json when bench/pytorch-codec.py ran first in the same call.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { codecTable, measuredCodecBaseline, PYTORCH_CODEC_BASELINE } from '../../bench/support/codec-report.ts';

const json = {
  torch: '2.11.0',
  framesPerLane: 52,
  rows: [
    { precision: 'fp16', lanes: 8, ms: 59, audioSecondsPerSecond: 327.5, firstFrameMs: 15.9 },
    { precision: 'fp16', lanes: 64, error: 'CUDA out of memory.' },
    { precision: 'fp32', lanes: 8, ms: 72, audioSecondsPerSecond: 268.9, firstFrameMs: 25.5 },
  ],
};

test('the measured baseline keeps the rows that ran and says which run it is', () => {
  const baseline = measuredCodecBaseline(json);
  assert.equal(baseline.measured, 'this run, torch 2.11.0');
  assert.deepEqual(baseline.rows, [
    { precision: 'fp16', lanes: 8, audioSecondsPerSecond: 327.5, firstFrameMs: 15.9 },
    { precision: 'fp32', lanes: 8, audioSecondsPerSecond: 268.9, firstFrameMs: 25.5 },
  ]);
});

test('each row beside its share of the dense GEMM rate and PyTorch at its own precision and lanes', () => {
  const row = { lanes: 8, audioSecondsPerSecond: 260, realTimePerStream: 32.5, teraflops: 38.75 };
  const lines = codecTable(
    [
      { ...row, precision: 'f16' },
      { ...row, precision: 'f16-weights' },
      { ...row, precision: 'f32' },
      { ...row, precision: 'f16', lanes: 64 },
    ],
    { f16: 2.5, 'f16-weights': 3, f32: 20 },
    775,
    measuredCodecBaseline(json),
  );
  const cells = lines.slice(2).map((line) => line.split(' | ').map((cell) => cell.replace(/^\| | \|$/g, '')));
  assert.match(lines[0]!, /PyTorch audio-s\/s, 52 frames a lane at once \(this run, torch 2\.11\.0\)/);
  assert.deepEqual(cells[0], ['f16', '8', '260.0', '32.50', '38.75', '5.0%', '2.50', '327.5', '15.90']);
  assert.deepEqual(cells[1]!.slice(5), ['5.0%', '3.00', '', ''], 'f16-weights has no PyTorch twin');
  assert.deepEqual(cells[2]!.slice(7), ['268.9', '25.50'], 'f32 against fp32');
  assert.deepEqual(cells[3]!.slice(7), ['', ''], 'a lane count PyTorch did not run stays empty');
});

test('without a measured baseline the table names the dated one', () => {
  const lines = codecTable([], {}, 775, PYTORCH_CODEC_BASELINE);
  assert.match(lines[0]!, /\(2026-12-02, not re-run here\)/);
});
