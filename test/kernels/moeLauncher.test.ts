// The FP8 expert launchers' choices, without a GPU: calls of MOE_WIDE_ROWS rows or more run the wide-tile kernels
// (moe_fp8_wide.cuh), fewer the narrow ones, which walk 4 weight groups a block (gate|up) or a warp (down) from
// MOE_WALK_ROWS rows on; either can be asked for, and each asks for the grid and shared memory its kernel assumes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MOE_WALK_ROWS, MOE_WIDE_ROWS, moeDownFp8, moeGateUpFp8, moeMaxTiles } from '../../src/backend/cuda/ops/moe.ts';
import { recordingDevice } from '../backend/support/recording-blocks.ts';

const GEOMETRY = { topK: 8, experts: 256, hidden: 2048, intermediate: 512 };
const POINTERS = { pairSlots: 1n, expertOffsets: 2n, tiles: 3n, tileCount: 4n };
const WEIGHTS = { gateUp: 5n, gateUpScales: 6n, down: 7n, downScales: 8n };

function launches(rows: number, tiling?: 'narrow' | 'wide') {
  const { cuda, launched } = recordingDevice();
  const sizes = { ...GEOMETRY, ...POINTERS, rows, weights: WEIGHTS, tiling };
  moeGateUpFp8(cuda, { ...sizes, h: 9n, quantized: 10n, scales: 11n });
  moeDownFp8(cuda, { ...sizes, y: 12n, h: 9n });
  return launched;
}

test('the narrow kernels walk 4 weight groups from MOE_WALK_ROWS rows on: a quarter of the blocks', () => {
  const tiles = (rows: number) => moeMaxTiles(rows * GEOMETRY.topK, GEOMETRY.experts);
  const [gateUpOne, downOne] = launches(MOE_WALK_ROWS - 1);
  assert.deepEqual(gateUpOne!.shape.grid, [tiles(MOE_WALK_ROWS - 1), 64, 1]);
  assert.deepEqual(downOne!.shape.grid, [tiles(MOE_WALK_ROWS - 1) * 16, 1, 1]);
  const [gateUpFour, downFour] = launches(MOE_WALK_ROWS);
  assert.equal(gateUpFour!.name, 'moe_gate_up_fp8');
  assert.deepEqual(gateUpFour!.shape.grid, [tiles(MOE_WALK_ROWS), 16, 1]);
  assert.deepEqual(downFour!.shape.grid, [tiles(MOE_WALK_ROWS) * 4, 1, 1]);
});

test('the launcher picks wide tiles from MOE_WIDE_ROWS rows on, narrow below', () => {
  assert.deepEqual(
    launches(MOE_WIDE_ROWS - 1).map((l) => l.name),
    ['moe_gate_up_fp8', 'moe_down_fp8'],
  );
  assert.deepEqual(
    launches(MOE_WIDE_ROWS).map((l) => l.name),
    ['moe_gate_up_fp8_wide', 'moe_down_fp8_wide'],
  );
  assert.deepEqual(
    launches(1, 'wide').map((l) => l.name),
    ['moe_gate_up_fp8_wide', 'moe_down_fp8_wide'],
  );
  assert.deepEqual(
    launches(4096, 'narrow').map((l) => l.name),
    ['moe_gate_up_fp8', 'moe_down_fp8'],
  );
});

test('the wide kernels get a block per narrow tile, their weight groups and their shared memory', () => {
  const rows = 512;
  const tiles = moeMaxTiles(rows * GEOMETRY.topK, GEOMETRY.experts);
  const [gateUp, down] = launches(rows);
  // gate|up: 64 groups of 16 rows (2I / 16), 4 a block; two f16 buffers of 64 pairs × 72 words, the rows' scales.
  assert.deepEqual(gateUp!.shape.grid, [tiles, 16, 1]);
  assert.deepEqual(gateUp!.shape.block, [128, 1, 1]);
  assert.equal(gateUp!.shape.sharedBytes, 2 * 64 * 288 + 64 * 16 * 4);
  // down: the output rows in two parts a tile; four widened K blocks, the e4m3 rows, their scales.
  assert.deepEqual(down!.shape.grid, [tiles, 2, 1]);
  assert.deepEqual(down!.shape.block, [256, 1, 1]);
  assert.equal(down!.shape.sharedBytes, 4 * 64 * 288 + 64 * (512 + 16) + 64 * 4 * 4);
});
