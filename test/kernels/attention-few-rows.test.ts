// Decode calls of few rows run the few-rows attention walk (four warps a query head) and larger ones a warp a head; the
// launcher's bound and the kernel's (and the controls', which pick the walk by the row count as the launcher does) must
// be one number, and the few-rows launch must take the shape its kernel is compiled for. Where a few-rows call's slab
// holds more splits than the few-rows walk takes, its shared form runs, whose grid also holds per-row blocks for the
// longer calls; the two walks' bound is the kernels' too.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  attention,
  attentionFewRowsSharedBytes,
  attentionSharedBytes,
  attentionSpreadBlocks,
  FEW_ROWS_MOST_BLOCKS,
  FEW_ROWS_MOST_ROWS,
  fewRowsMayLeave,
} from '../../src/backend/cuda/ops/attention.ts';
import { recordingDevice as recordingContext } from '../backend/support/recording-blocks.ts';

const HEADER = new URL('../../kernels/cuda/attention.cuh', import.meta.url);

test("the launcher's few-rows bound is the kernels' ATTENTION_FEW_ROWS", () => {
  const match = /^#define ATTENTION_FEW_ROWS (\d+)\s*$/m.exec(readFileSync(HEADER, 'utf8'));
  assert.ok(match, 'kernels/cuda/attention.cuh no longer defines ATTENTION_FEW_ROWS');
  assert.equal(FEW_ROWS_MOST_ROWS, Number(match[1]));
});

test("the launcher's few-rows block bound is the kernels' ATTENTION_FEW_ROWS_MOST_BLOCKS", () => {
  const match = /^#define ATTENTION_FEW_ROWS_MOST_BLOCKS (\d+)\s*$/m.exec(readFileSync(HEADER, 'utf8'));
  assert.ok(match, 'kernels/cuda/attention.cuh no longer defines ATTENTION_FEW_ROWS_MOST_BLOCKS');
  assert.equal(FEW_ROWS_MOST_BLOCKS, Number(match[1]));
});

test('decode calls of at most 4 rows at head dim 128 or 256 run the few-rows walk in blocks of at most 2 heads', () => {
  const { cuda, launched } = recordingContext();
  // 20 splits: 1 row × 2 KV heads stays within the few-rows walk's 128 blocks; 4 rows may not.
  const geometry = { queryHeads: 16, kvHeads: 2, slots: 3, capacity: 5000 };
  const buffers = { out: 1n, q: 2n, keys: 3n, values: 4n, rowTable: 5n, workspace: 6n };
  attention(cuda, { ...geometry, ...buffers, headDim: 256, rows: 1, headsPerBlock: 4 });
  attention(cuda, { ...geometry, ...buffers, headDim: 128, rows: 4 });
  attention(cuda, { ...geometry, ...buffers, headDim: 256, rows: 5 });
  attention(cuda, { ...geometry, ...buffers, headDim: 64, rows: 1 });
  const names = launched.map((launch) => launch.name).filter((name) => !name.includes('combine'));
  assert.deepEqual(names, [
    'attention_few_rows_bf16_d256',
    'attention_few_rows_shared_bf16_d128',
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
  // 4 rows may reach 4 · 20 splits · 2 KV heads: the launch also holds a per-row block for each KV head.
  assert.deepEqual(launched[2]!.shape.grid, [4, 2 + 8, 20]);
  assert.equal(attentionFewRowsSharedBytes(256, 2), 65536 + 2 * 68 * 4);
  const perRow = launched.find((launch) => launch.name === 'attention_bf16_d256')!;
  assert.deepEqual(perRow.shape.block, [256, 1, 1], 'past 4 rows, a warp a head: the whole group of 8 a block');
});

test('a few-rows call whose slab holds more splits than the few-rows walk takes runs its shared form', () => {
  const { cuda, launched } = recordingContext();
  const buffers = { out: 1n, q: 2n, keys: 3n, values: 4n, rowTable: 5n, workspace: 6n };
  const geometry = { queryHeads: 16, kvHeads: 2, slots: 3, headDim: 256, rows: 1 };
  // 64 splits × 2 KV heads = 128 blocks: the few-rows walk takes every call; 65 splits may not.
  assert.equal(fewRowsMayLeave(1, 2, 64 * 256), false);
  assert.equal(fewRowsMayLeave(1, 2, 64 * 256 + 1), true);
  attention(cuda, { ...geometry, ...buffers, capacity: 64 * 256 });
  attention(cuda, { ...geometry, ...buffers, capacity: 64 * 256 + 1 });
  // A group of 4 heads is 2 few-rows blocks of 2 heads (256 threads) but a per-row block of 128: never shared.
  attention(cuda, { ...geometry, ...buffers, queryHeads: 8, capacity: 64 * 256 + 1 });
  assert.deepEqual(
    launched.map((launch) => launch.name),
    [
      'attention_few_rows_bf16_d256',
      'attention_combine_bf16_d256',
      'attention_few_rows_shared_bf16_d256',
      'attention_combine_bf16_d256',
      'attention_few_rows_bf16_d256',
      'attention_combine_bf16_d256',
    ],
  );
  const z = attentionSpreadBlocks(1, 2, 64 * 256 + 1);
  assert.deepEqual(launched[0]!.shape.grid, [1, 8, 64]);
  // The shared launch: a per-row block for each of the 2 KV heads first, then the 8 few-rows blocks, the same z.
  assert.deepEqual(launched[2]!.shape, {
    grid: [1, 2 + 8, z],
    block: [256, 1, 1],
    sharedBytes: attentionFewRowsSharedBytes(256, 2),
  });
  assert.ok(attentionFewRowsSharedBytes(256, 2) >= attentionSharedBytes(0, 256, 8), 'the per-row tiles fit');
  assert.deepEqual(launched[4]!.shape.grid, [1, 4, z]);
});
