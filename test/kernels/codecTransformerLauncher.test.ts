// The codec transformer launchers' host side, without a GPU: the grid and block each call gets (sizes only), the
// kernel arguments in the order kernels/cuda/codec_transformer.cu declares them, the attention's shared memory, and
// bad sizes refused with KERNEL_ARGUMENT_INVALID naming the value before anything is launched.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import koffi from 'koffi';
import {
  CODEC_MAXIMUM_HEAD_DIM,
  CODEC_MAXIMUM_WINDOW,
  codecAttentionSharedBytes,
  codecRingUpdate,
  codecRmsNorm,
  codecRope,
  codecSwiGlu,
  codecWindowAttention,
} from '../../src/backend/cuda/ops/codecTransformer.ts';
import { type Launched, recordingDevice } from '../backend/support/recording-blocks.ts';

const int32At = (launch: Launched, index: number) => koffi.decode(launch.parameters[index]!, 'int32_t') as number;
const doubleAt = (launch: Launched, index: number) => koffi.decode(launch.parameters[index]!, 'double') as number;

const call = { sequences: 9n, sequenceCount: 3, longestSequence: 40, rowScale: 2 };
const heads = { heads: 16, headDim: 64 };
const refused = (param: string) => ({ code: 'KERNEL_ARGUMENT_INVALID', param });

test('the attention runs one block per (head, 16 rows of the longest lane, lane) with its fp64 scores, queries and tile', () => {
  const { cuda, launched } = recordingDevice();
  const limits: number[] = [];
  const carveouts: number[] = [];
  Object.assign(cuda.driver, {
    setMaxDynamicSharedBytes: (_kernel: unknown, bytes: number) => limits.push(bytes),
    setPreferredSharedCarveout: (_kernel: unknown, percent: number) => carveouts.push(percent),
  });
  codecWindowAttention(cuda, { ...call, ...heads, out: 1n, qkv: 2n, keys: 3n, values: 4n, window: 128 });
  codecWindowAttention(cuda, {
    ...call,
    ...heads,
    longestSequence: 1,
    out: 1n,
    qkv: 2n,
    keys: 3n,
    values: 4n,
    window: 512,
  });
  assert.equal(launched[0]!.name, 'codec_window_attention');
  // Scores [128 + 15 keys][16 rows], queries [64][16 rows], a tile [64 keys][64 + 1], all fp64.
  const shared128 = (143 * 16 + 64 * 16 + 64 * 65) * 8;
  assert.deepEqual(launched[0]!.shape, { grid: [16, 5, 3], block: [256, 1, 1], sharedBytes: shared128 });
  const shared512 = (527 * 16 + 64 * 16 + 64 * 65) * 8;
  assert.deepEqual(launched[1]!.shape, { grid: [16, 1, 3], block: [256, 1, 1], sharedBytes: shared512 });
  assert.deepEqual(limits, [shared128, shared512], 'past 48 KiB the limit is raised before the launch');
  assert.deepEqual(carveouts, [100, 100], 'with all of L1 as shared memory, so that two blocks fit an SM');
  assert.deepEqual(
    [5, 6, 7, 8].map((index) => int32At(launched[0]!, index)),
    [2, 16, 64, 128],
  );
  // The largest head and window fit the 227 KiB a block may have beside the kernel's static 2304 bytes.
  assert.ok(codecAttentionSharedBytes(CODEC_MAXIMUM_HEAD_DIM, CODEC_MAXIMUM_WINDOW) + 2304 <= 227 * 1024);
});

test('RoPE, the ring update, RMSNorm and SwiGLU get grids from their sizes alone', () => {
  const { cuda, launched } = recordingDevice();
  codecRope(cuda, { ...call, ...heads, qkv: 1n, frequencies: 2n, table: 3n, tablePositions: 100 });
  codecRingUpdate(cuda, { ...call, ...heads, keys: 1n, values: 2n, qkv: 3n, window: 128 });
  codecRingUpdate(cuda, { ...call, ...heads, longestSequence: 1, keys: 1n, values: 2n, qkv: 3n, window: 128 });
  codecRmsNorm(cuda, { out: 1n, x: 2n, weight: 3n, rows: 7, width: 1024, eps: 1e-5 });
  codecSwiGlu(cuda, { out: 1n, gateUp: 2n, rows: 3, intermediate: 3072 });
  assert.deepEqual(
    launched.map((launch) => [launch.name, launch.shape]),
    [
      ['codec_rope', { grid: [1, 20, 3], block: [32, 4, 1] }],
      ['codec_ring_update', { grid: [8, 80, 3], block: [128, 1, 1] }],
      ['codec_ring_update', { grid: [8, 2, 3], block: [128, 1, 1] }],
      ['codec_rms_norm', { grid: [7, 1, 1], block: [256, 1, 1] }],
      ['codec_swiglu', { grid: [36, 1, 1], block: [256, 1, 1] }],
    ],
  );
  assert.equal(int32At(launched[0]!, 7), 100, 'table positions');
  assert.equal(doubleAt(launched[3]!, 5), 1e-5, 'eps as fp64');
});

test('bad sizes are refused by name before any launch', () => {
  const { cuda, launched } = recordingDevice();
  const attention = { ...call, ...heads, out: 1n, qkv: 2n, keys: 3n, values: 4n, window: 128 };
  assert.throws(() => codecWindowAttention(cuda, { ...attention, headDim: 63 }), refused('headDim'));
  assert.throws(() => codecWindowAttention(cuda, { ...attention, headDim: 130 }), refused('headDim'));
  assert.throws(() => codecWindowAttention(cuda, { ...attention, window: 0 }), refused('window'));
  assert.throws(() => codecWindowAttention(cuda, { ...attention, window: 1025 }), refused('window'));
  assert.throws(() => codecWindowAttention(cuda, { ...attention, sequenceCount: 0 }), refused('sequenceCount'));
  assert.throws(() => codecWindowAttention(cuda, { ...attention, rowScale: 1.5 }), refused('rowScale'));
  const rope = { ...call, ...heads, qkv: 1n, frequencies: 2n, tablePositions: 0 };
  assert.throws(() => codecRope(cuda, { ...rope, tablePositions: 5 }), refused('table'));
  assert.throws(() => codecRope(cuda, { ...rope, table: 3n }), refused('table'));
  assert.throws(() => codecRope(cuda, { ...rope, heads: 0 }), refused('heads'));
  const ring = { ...call, ...heads, keys: 1n, values: 2n, qkv: 3n, window: 128 };
  assert.throws(() => codecRingUpdate(cuda, { ...ring, headDim: 7 }), refused('headDim'));
  assert.throws(() => codecRingUpdate(cuda, { ...ring, longestSequence: 0 }), refused('longestSequence'));
  const norm = { out: 1n, x: 2n, weight: 3n, rows: 7, width: 1024, eps: 1e-5 };
  assert.throws(() => codecRmsNorm(cuda, { ...norm, x: 1n }), refused('out'));
  assert.throws(() => codecRmsNorm(cuda, { ...norm, eps: Number.NaN }), refused('eps'));
  assert.throws(() => codecRmsNorm(cuda, { ...norm, width: 0 }), refused('width'));
  assert.throws(() => codecSwiGlu(cuda, { out: 1n, gateUp: 2n, rows: 3, intermediate: 0 }), refused('intermediate'));
  assert.equal(launched.length, 0);
});
