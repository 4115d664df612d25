// The attention launchers' host side, without a GPU: argument checks that name the bad value, the grid, block and
// shared memory each call gets, the kernel arguments in the order kernels/cuda/attention.cu declares them, and where
// a call of at most 64 rows spreads its splits (per-row kernel + combine) while a larger one runs the grouped kernel.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import koffi from 'koffi';
import {
  attention,
  attentionPrepare,
  attentionSharedBytes,
  attentionSpreadBlocks,
  attentionWorkspaceBytes,
} from '../../src/backend/cuda/ops/attention.ts';
import { type Launched, recordingDevice as recordingContext } from '../backend/support/recording-blocks.ts';
import { LONG_SLAB_SCENARIOS } from './support/attentionCases.ts';
import { Random } from './support/random.ts';

const int32At = (launch: Launched, index: number) => koffi.decode(launch.parameters[index]!, 'int32_t') as number;
const floatAt = (launch: Launched, index: number) => koffi.decode(launch.parameters[index]!, 'float') as number;

const geometry = { queryHeads: 16, kvHeads: 2, headDim: 256, slots: 3, capacity: 5000 };
const buffers = { out: 1n, q: 2n, keys: 3n, values: 4n, rowTable: 5n, workspace: 6n };

test('a call of at most 64 rows spreads its splits over blocks and folds them in the combine kernel', () => {
  const { cuda, launched } = recordingContext();
  attention(cuda, { ...geometry, ...buffers, rows: 64, gate: 7n, gateRowStride: 8192, gateHeadStride: 512 });
  assert.deepEqual(
    launched.map((launch) => launch.name),
    ['attention_bf16_d256', 'attention_combine_bf16_d256'],
  );
  // 20 splits dealt to ceil(2048 / (64 · 2)) = 16 blocks per row and head; K and V tiles of 64 × 256 bf16.
  assert.deepEqual(launched[0]!.shape, { grid: [64, 2, 16], block: [256, 1, 1], sharedBytes: 65536 });
  assert.deepEqual(launched[1]!.shape, { grid: [64, 2, 1], block: [256, 1, 1] });
  assert.equal(int32At(launched[0]!, 14), 20, 'max splits = ceil(5000 / 256)');
  assert.equal(floatAt(launched[0]!, 15), 1 / 16, 'scale 1/sqrt(256)');
  assert.equal(int32At(launched[0]!, 16), 0, 'fold off');
  assert.equal(attentionWorkspaceBytes(64, geometry), 64 * 16 * 20 * 258 * 4);
});

test('a decode step deals its splits to a grid fixed by the row count and the capacity', () => {
  const { cuda, launched } = recordingContext();
  const full = { ...geometry, capacity: 262144 };
  attention(cuda, { ...full, ...buffers, rows: 1 });
  attention(cuda, { ...full, ...buffers, rows: 7 });
  attention(cuda, { ...geometry, ...buffers, capacity: 300, rows: 1 });
  // One row: the few-rows walk, a KV head's 8 heads in 4 blocks of 2, after a per-row block for each KV head (fold 2),
  // which walks the calls past the few-rows walk's bound that this slab can hold.
  assert.equal(launched[0]!.name, 'attention_few_rows_shared_bf16_d256');
  assert.deepEqual(launched[0]!.shape.grid, [1, 2 + 8, 1024], 'a block for each of 1024 splits');
  assert.equal(int32At(launched[0]!, 14), 1024, 'the workspace holds every split');
  assert.equal(int32At(launched[0]!, 16), 2, 'the few-rows and per-row walks share the launch');
  assert.deepEqual(launched[2]!.shape.grid, [7, 2, 147]);
  assert.equal(int32At(launched[2]!, 16), 0, 'past 4 rows the per-row walk takes every call');
  assert.deepEqual(launched[4]!.shape.grid, [1, 8, 2], 'never more blocks than splits');
  assert.equal(int32At(launched[4]!, 16), 0, 'a slab of 2 splits: the few-rows walk alone');
  assert.equal(attentionSpreadBlocks(64, 2, 262144), 16);
  assert.equal(attentionSpreadBlocks(1, 2, 2 * 262144), 1024, 'past 262144 keys a block walks several splits');
});

test("the contract's calls over a long slab run the few-rows kernel's shared form", () => {
  assert.equal(LONG_SLAB_SCENARIOS.length, 2);
  for (const scenario of LONG_SLAB_SCENARIOS) {
    const { cuda, launched } = recordingContext();
    const rows = scenario.rows(new Random(1));
    const slots = { slots: scenario.slots, capacity: scenario.capacity };
    attention(cuda, { ...geometry, ...slots, ...buffers, rows: rows.slots.length }, {});
    assert.equal(launched[0]!.name, 'attention_few_rows_shared_bf16_d256', scenario.label);
    assert.equal(int32At(launched[0]!, 16), 2, scenario.label);
  }
});

test('a larger call runs the grouped kernel, 4 rows a block, folds on chip and needs no workspace', () => {
  const { cuda, launched } = recordingContext();
  attention(cuda, { ...geometry, ...buffers, workspace: 0n, rows: 65, headDim: 64, queryHeads: 6, kvHeads: 3 });
  attention(cuda, { ...geometry, ...buffers, workspace: 0n, rows: 257 });
  assert.deepEqual(
    launched.map((launch) => launch.name),
    ['attention_grouped_bf16_d64', 'attention_grouped_bf16_d256'],
  );
  // Tiles 2 · 64 · 64 bf16, then 4 rows' fold states of (64/32 + 2) floats for each of 64 threads.
  assert.deepEqual(launched[0]!.shape, { grid: [17, 3, 1], block: [64, 1, 1], sharedBytes: 16384 + 4096 });
  assert.deepEqual(launched[1]!.shape, { grid: [65, 2, 1], block: [256, 1, 1], sharedBytes: 65536 + 40960 });
  assert.equal(attentionSharedBytes(4, 256, 8), 106496);
  assert.equal(int32At(launched[0]!, 16), 1, 'fold on');
  assert.equal(attentionWorkspaceBytes(65, geometry), 0);
});

test('a larger call asked for one row a block runs the per-row kernel folding on chip', () => {
  const { cuda, launched } = recordingContext();
  attention(cuda, { ...geometry, ...buffers, workspace: 0n, rows: 257, rowsPerBlock: 1 });
  attention(cuda, { ...geometry, ...buffers, rows: 64, rowsPerBlock: 4 });
  assert.deepEqual(
    launched.map((launch) => launch.name),
    ['attention_bf16_d256', 'attention_bf16_d256', 'attention_combine_bf16_d256'],
    'calls of at most 64 rows spread whatever rowsPerBlock says',
  );
  // Tiles, then one row's fold state of (256/32 + 2) floats for each of 256 threads.
  assert.deepEqual(launched[0]!.shape, { grid: [257, 2, 1], block: [256, 1, 1], sharedBytes: 65536 + 10240 });
  assert.equal(int32At(launched[0]!, 16), 1, 'fold on');
  assert.equal(attentionSharedBytes(0, 256, 8), 65536);
});

test("a spread call asked for fewer heads a block deals each KV head's query heads to more blocks", () => {
  const { cuda, launched } = recordingContext();
  attention(cuda, { ...geometry, ...buffers, capacity: 300, rows: 5, headsPerBlock: 2 });
  attention(cuda, { ...geometry, ...buffers, capacity: 300, rows: 7, headsPerBlock: 8 });
  attention(cuda, { ...geometry, ...buffers, workspace: 0n, rows: 65, headsPerBlock: 1 });
  // 2 KV heads × 4 blocks of 2 warps; the combine keeps a block of the whole group per KV head.
  assert.deepEqual(launched[0]!.shape, { grid: [5, 8, 2], block: [64, 1, 1], sharedBytes: 65536 });
  assert.deepEqual(launched[1]!.shape, { grid: [5, 2, 1], block: [256, 1, 1] });
  assert.deepEqual(launched[2]!.shape.grid, [7, 2, 2], 'the whole group: a block per KV head');
  assert.deepEqual(launched[2]!.shape.block, [256, 1, 1]);
  assert.deepEqual(launched[4]!.shape.block, [256, 1, 1], 'a grouped call walks the whole group whatever is asked');
  assert.throws(() => attention(cuda, { ...geometry, ...buffers, rows: 1, headsPerBlock: 3 }), {
    code: 'KERNEL_ARGUMENT_INVALID',
    param: 'headsPerBlock',
  });
});

test('the prepare kernel runs one block per (row, head) with the block size rms_norm_bf16 would use', () => {
  const { cuda, launched } = recordingContext();
  const pointers = { qOut: 1n, keys: 2n, values: 3n, qProj: 4n, kProj: 5n, vProj: 6n, qNorm: 7n, kNorm: 8n };
  const a = { ...geometry, ...pointers, rowTable: 9n, rows: 7, rotaryDims: 64, theta: 1e7, eps: 1e-6 };
  attentionPrepare(cuda, { ...a, style: 'interleaved', gated: true });
  assert.deepEqual(launched[0]!.shape, { grid: [7 * 18, 1, 1], block: [64, 1, 1] });
  assert.equal(int32At(launched[0]!, 15), 1, 'interleaved');
  assert.equal(int32At(launched[0]!, 16), 1, 'gated');
  assert.equal(int32At(launched[0]!, 18), 5000, 'capacity');
});

test('bad sizes are refused with KERNEL_ARGUMENT_INVALID naming the value, before any launch', () => {
  const { cuda, launched } = recordingContext();
  const refused = (param: string) => ({ code: 'KERNEL_ARGUMENT_INVALID', param });
  assert.throws(
    () => attention(cuda, { ...geometry, ...buffers, rows: 1, headDim: 96 }),
    refused('headDim (64, 128 or 256)'),
  );
  assert.throws(
    () => attention(cuda, { ...geometry, ...buffers, rows: 1, queryHeads: 15 }),
    refused('queryHeads / kvHeads (an integer ≤ 8)'),
  );
  assert.throws(
    () => attention(cuda, { ...geometry, ...buffers, rows: 1, queryHeads: 32 }),
    refused('queryHeads / kvHeads (an integer ≤ 8)'),
  );
  assert.throws(() => attention(cuda, { ...geometry, ...buffers, rows: 0 }), refused('rows'));
  assert.throws(() => attention(cuda, { ...geometry, ...buffers, rows: 2, workspace: 0n }), refused('workspace'));
  const rowsPerBlock = 2 as 1 | 4;
  assert.throws(() => attention(cuda, { ...geometry, ...buffers, rows: 65, rowsPerBlock }), refused('rowsPerBlock'));
  assert.throws(
    () => attention(cuda, { ...geometry, ...buffers, rows: 1, capacity: 256 * 65535 + 1 }),
    refused('capacity / 256 (splits in a grid dimension)'),
  );
  const pointers = { qOut: 1n, keys: 2n, values: 3n, qProj: 4n, kProj: 5n, vProj: 6n, qNorm: 7n, kNorm: 8n };
  const a = {
    ...geometry,
    ...pointers,
    rowTable: 9n,
    rows: 7,
    theta: 1e7,
    eps: 1e-6,
    style: 'neox',
    gated: true,
  } as const;
  assert.throws(() => attentionPrepare(cuda, { ...a, rotaryDims: 63 }), refused('rotaryDims (even)'));
  assert.throws(() => attentionPrepare(cuda, { ...a, headDim: 512, rotaryDims: 64 }), refused('headDim'));
  assert.equal(launched.length, 0);
});
