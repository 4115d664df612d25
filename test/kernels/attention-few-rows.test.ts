// Decode calls of few rows run the few-rows attention walk (four warps a query head) and larger ones a warp a head; the
// launcher's bound and the kernel's (and the controls', which pick the walk by the row count as the launcher does) must
// be one number, and the few-rows launch must take the shape its kernel is compiled for.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { attention, attentionFewRowsSharedBytes, FEW_ROWS_MOST_ROWS } from '../../src/backend/cuda/ops/attention.ts';
import { recordingDevice as recordingContext } from '../backend/support/recording-blocks.ts';

const HEADER = new URL('../../kernels/cuda/attention.cuh', import.meta.url);

test("the launcher's few-rows bound is the kernels' ATTENTION_FEW_ROWS", () => {
  const match = /^#define ATTENTION_FEW_ROWS (\d+)\s*$/m.exec(readFileSync(HEADER, 'utf8'));
  assert.ok(match, 'kernels/cuda/attention.cuh no longer defines ATTENTION_FEW_ROWS');
  assert.equal(FEW_ROWS_MOST_ROWS, Number(match[1]));
});

test('decode calls of at most 4 rows at head dim 128 or 256 run the few-rows walk in blocks of at most 2 heads', () => {
  const { cuda, launched } = recordingContext();
  const geometry = { queryHeads: 16, kvHeads: 2, slots: 3, capacity: 5000 };
  const buffers = { out: 1n, q: 2n, keys: 3n, values: 4n, rowTable: 5n, workspace: 6n };
  attention(cuda, { ...geometry, ...buffers, headDim: 256, rows: 1, headsPerBlock: 4 });
  attention(cuda, { ...geometry, ...buffers, headDim: 128, rows: 4 });
  attention(cuda, { ...geometry, ...buffers, headDim: 256, rows: 5 });
  attention(cuda, { ...geometry, ...buffers, headDim: 64, rows: 1 });
  const names = launched.map((launch) => launch.name).filter((name) => !name.includes('combine'));
  assert.deepEqual(names, [
    'attention_few_rows_bf16_d256',
    'attention_few_rows_bf16_d128',
    'attention_bf16_d256',
    'attention_bf16_d64',
  ]);
  // 2 KV heads × 4 blocks of 2 heads (128 threads a head); the combine keeps a block of the whole group per KV head.
  assert.deepEqual(launched[0]!.shape, {
    grid: [1, 8, 20],
    block: [256, 1, 1],
    sharedBytes: attentionFewRowsSharedBytes(256, 2),
  });
  assert.deepEqual(launched[1]!.shape, { grid: [1, 2, 1], block: [256, 1, 1] });
  assert.equal(attentionFewRowsSharedBytes(256, 2), 65536 + 2 * 68 * 4);
  const perRow = launched.find((launch) => launch.name === 'attention_bf16_d256')!;
  assert.deepEqual(perRow.shape.block, [256, 1, 1], 'past 4 rows, a warp a head: the whole group of 8 a block');
});
