// The GEMM and FP8 quantisation launchers' host side, without a GPU: argument checks name the bad value, the K chunk
// plan depends on (N, K) only and covers K, and the grid, block, shared memory and workspace each launch asks for
// match what the kernels assume (kernels/cuda/gemm_tiles.cuh, quantize_fp8.cu). A stand-in context records launches.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CudaContext } from '../../src/backend/cuda/context.ts';
import type { LaunchShape } from '../../src/backend/cuda/driver.ts';
import {
  type GemmArguments,
  gemm,
  gemmChunks,
  gemmChunkTiles,
  gemmTilesFor,
  gemmWorkspaceBytes,
} from '../../src/backend/cuda/ops/gemm.ts';
import { quantizeE4m3 } from '../../src/backend/cuda/ops/quantizeFp8.ts';

interface Recorded {
  readonly name: string;
  readonly shape: LaunchShape;
  readonly dependent: boolean;
  readonly sharedLimit: number | undefined;
}

function standIn(): { cuda: CudaContext; launches: Recorded[] } {
  const launches: Recorded[] = [];
  const limits = new Map<string, number>();
  const driver = {
    setMaxDynamicSharedBytes: (kernel: string, bytes: number) => limits.set(kernel, bytes),
    setPreferredSharedCarveout: () => {},
    launch: (_kernel: string, shape: LaunchShape, _stream: unknown, _parameters: unknown, name: string) =>
      launches.push({ name, shape, dependent: false, sharedLimit: limits.get(name) }),
    launchEx: (
      _kernel: string,
      shape: LaunchShape,
      _stream: unknown,
      _parameters: unknown,
      _attributes: unknown,
      name: string,
    ) => launches.push({ name, shape, dependent: true, sharedLimit: limits.get(name) }),
  };
  const kernels = {
    kernel: (_family: string, name: string) => name,
    prepareOnce: (kernel: string, prepare: (d: unknown, k: string) => void) => prepare(driver, kernel),
  };
  const cuda = { driver, kernels, stream: 0n, properties: { multiprocessors: 132 } } as unknown as CudaContext;
  return { cuda, launches };
}

const base: GemmArguments = {
  y: 0x1000n,
  x: 0x2000n,
  w: 0x3000n,
  workspace: 0x4000n,
  rows: 1,
  outFeatures: 2048,
  inFeatures: 4096,
};

function refusal(change: Partial<GemmArguments>, param: string) {
  const { cuda } = standIn();
  assert.throws(
    () => gemm(cuda, { ...base, ...change }),
    (error: { code?: string; param?: string }) => error.code === 'KERNEL_ARGUMENT_INVALID' && error.param === param,
    `expected KERNEL_ARGUMENT_INVALID naming ${param}`,
  );
}

test('bad GEMM arguments are refused, naming the argument', () => {
  refusal({ rows: 0 }, 'rows');
  refusal({ rows: 1.5 }, 'rows');
  refusal({ outFeatures: 0 }, 'outFeatures');
  refusal({ inFeatures: 1001 }, 'inFeatures');
  refusal({ inFeatures: 4 }, 'inFeatures');
  refusal({ x: 0x2008n }, 'x');
  refusal({ w: 0x3002n }, 'w');
  refusal({ y: 0x1004n }, 'y');
  refusal({ workspace: undefined }, 'workspace');
  refusal({ workspace: 0x4008n }, 'workspace');
  refusal({ output: 'f16' as 'f32' }, 'output');
});

const REAL_SHAPES = [
  [2048, 12352],
  [2048, 8192],
  [2048, 512],
  [4096, 2048],
  [2048, 1024],
  [512, 2048],
  [2048, 256],
  [2048, 4097],
  [2048, 12288],
  [6144, 2048],
] as const;

test('the K chunks cover K in at most 16 chunks of at least two tiles, and one row fills one wave of blocks', () => {
  for (const [inFeatures, outFeatures] of [...REAL_SHAPES, [1000, 999] as const, [8, 5] as const]) {
    const kTiles = Math.ceil(inFeatures / 64);
    const chunkTiles = gemmChunkTiles(outFeatures, inFeatures);
    const chunks = gemmChunks(outFeatures, inFeatures);
    assert.ok(chunks >= 1 && chunks <= 16, `${inFeatures}→${outFeatures}: ${chunks} chunks`);
    assert.ok((chunks - 1) * chunkTiles < kTiles && chunks * chunkTiles >= kTiles, `${inFeatures}→${outFeatures}`);
    if (kTiles >= 2) assert.ok(chunkTiles >= 2, `${inFeatures}→${outFeatures}: ${chunkTiles} tiles per chunk`);
    const blocks = Math.ceil(outFeatures / 64) * chunks;
    assert.ok(blocks <= 528, `${inFeatures}→${outFeatures}: ${blocks} blocks, more than one wave`);
    if (inFeatures * outFeatures >= 2048 * 4096) {
      assert.ok(blocks >= 384, `${inFeatures}→${outFeatures}: ${blocks} blocks`);
    }
  }
});

test('every row count launches the tile kernel its configuration needs, and a split adds the ordered combine', () => {
  for (const [rows, kernel, blockRows, blockColumns, threads, stages] of [
    [1, 'gemm_rows16_bf16', 16, 64, 128, 4],
    [16, 'gemm_rows16_bf16', 16, 64, 128, 4],
    [17, 'gemm_rows64_bf16', 64, 64, 128, 4],
    [64, 'gemm_rows64_bf16', 64, 64, 128, 4],
    [65, 'gemm_rows96_bf16', 96, 128, 384, 3],
    [4096, 'gemm_rows96_bf16', 96, 128, 384, 3],
  ] as const) {
    assert.equal(gemmTilesFor(rows), kernel.slice(5, 11));
    const { cuda, launches } = standIn();
    const outFeatures = 4097;
    const inFeatures = 2048;
    gemm(cuda, { ...base, rows, outFeatures, inFeatures });
    const chunks = gemmChunks(outFeatures, inFeatures);
    const split = blockRows <= 64;
    const shared = stages * (blockRows + blockColumns) * 72 * 2;
    assert.deepEqual(launches[0], {
      name: kernel,
      shape: {
        grid: split
          ? [Math.ceil(outFeatures / blockColumns), Math.ceil(rows / blockRows), chunks]
          : [Math.ceil(rows / blockRows), Math.ceil(outFeatures / blockColumns), 1],
        block: [threads, 1, 1],
        sharedBytes: shared,
      },
      dependent: true,
      sharedLimit: shared,
    });
    assert.ok(shared <= 227 * 1024, `${kernel} asks for ${shared} bytes of shared memory`);
    assert.equal(launches.length, split ? 2 : 1);
    if (split) assert.equal(launches[1]!.name, 'gemm_combine');
    const counters = Math.ceil(rows / 16) * Math.ceil(outFeatures / 64) * 4;
    assert.equal(
      gemmWorkspaceBytes(rows, outFeatures, inFeatures),
      split ? chunks * rows * outFeatures * 4 + counters : 0,
    );
  }
});

test('a replacement kernel runs on rows16 geometry with the split the row count would pick', () => {
  const { cuda, launches } = standIn();
  const kernel = { family: 'gemm_controls', name: 'control_gemm_k_reversed_with_rows' };
  gemm(cuda, { ...base, rows: 257, workspace: undefined }, { kernel });
  assert.equal(launches.length, 1);
  assert.deepEqual(launches[0]!.shape.grid, [32, 17, 1]);
  assert.equal(launches[0]!.name, kernel.name);
});

test('the last-block combine is one launch, with the counters after the partials', () => {
  const { cuda, launches } = standIn();
  gemm(cuda, { ...base, rows: 3 }, { combine: 'last-block' });
  assert.equal(launches.length, 1);
  assert.equal(launches[0]!.name, 'gemm_rows16_bf16');
  const chunks = gemmChunks(2048, 4096);
  assert.equal(gemmWorkspaceBytes(3, 2048, 4096), chunks * 3 * 2048 * 4 + 1 * 32 * 4);
  assert.throws(() => gemm(cuda, base, { combine: 'atomic' as 'kernel' }), /combine must be/);
});

test('the quantiser launches one warp per row and 128-column block, and refuses bad sizes', () => {
  const { cuda, launches } = standIn();
  quantizeE4m3(cuda, { q: 0x10n, scales: 0x20n, x: 0x30n, rows: 37, cols: 1000 });
  assert.deepEqual(launches[0]!.shape, { grid: [2, 37, 1], block: [128, 1, 1] });
  assert.throws(() => quantizeE4m3(cuda, { q: 0n, scales: 0n, x: 0n, rows: 0, cols: 8 }), /rows must be/);
  // Past one y grid of rows the kernel walks the rest (the h of a large MoE call has rows · top-k rows).
  quantizeE4m3(cuda, { q: 0n, scales: 0n, x: 0n, rows: 70000, cols: 8 });
  assert.deepEqual(launches[1]!.shape, { grid: [1, 65535, 1], block: [128, 1, 1] });
  assert.throws(() => quantizeE4m3(cuda, { q: 0n, scales: 0n, x: 0n, rows: 2 ** 24 + 1, cols: 8 }), /rows must be/);
});
