// The GEMM and FP8 quantisation launchers' host side, without a GPU: argument checks name the bad value, the K chunk
// plan depends on (N, K) only and covers K, and the grid, block, shared memory and workspace each launch asks for
// match what the kernels assume (kernels/cuda/gemm_tiles.cuh, quantize_fp8.cu). A stand-in context records launches.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import koffi from 'koffi';
import type { CudaContext } from '../../src/backend/cuda/context.ts';
import type { LaunchShape } from '../../src/backend/cuda/driver.ts';
import {
  type GemmArguments,
  gemm,
  gemmChunks,
  gemmChunkTiles,
  gemmTilesFor,
  gemmWorkspaceBytes,
  WIDE_CALL_COLUMNS,
} from '../../src/backend/cuda/ops/gemm.ts';
import {
  type GemmSegmentsArguments,
  gemmSegments,
  gemmSegmentsWorkspaceBytes,
} from '../../src/backend/cuda/ops/gemmSegments.ts';
import { quantizeE4m3 } from '../../src/backend/cuda/ops/quantizeFp8.ts';

interface Recorded {
  readonly name: string;
  readonly shape: LaunchShape;
  readonly dependent: boolean;
  readonly sharedLimit: number | undefined;
}

function standIn(computeCapability: readonly [number, number] = [8, 0]): {
  cuda: CudaContext;
  launches: Recorded[];
  parameters: BigUint64Array[];
} {
  const launches: Recorded[] = [];
  /** Each launch's parameter address table, as the driver would read it. */
  const parameters: BigUint64Array[] = [];
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
      table: BigUint64Array,
      _attributes: unknown,
      name: string,
    ) => {
      parameters.push(table.slice());
      launches.push({ name, shape, dependent: true, sharedLimit: limits.get(name) });
    },
  };
  const kernels = {
    kernel: (_family: string, name: string) => name,
    prepareOnce: (kernel: string, prepare: (d: unknown, k: string) => void) => prepare(driver, kernel),
  };
  const properties = { multiprocessors: 132, computeCapability };
  const cuda = { driver, kernels, stream: 0n, properties } as unknown as CudaContext;
  return { cuda, launches, parameters };
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
    // Decode rows pick rows16k128, and a chunking that is not whole 128-element tiles (4097 columns: 5) falls back.
    assert.equal(gemmTilesFor(rows), rows <= 16 ? 'rows16k128' : kernel.slice(5, 11));
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

test('a call of 17 to 64 rows at least WIDE_CALL_COLUMNS wide runs unsplit on rows96 tiles, a narrower one split', () => {
  for (const [rows, outFeatures, kernel] of [
    [17, WIDE_CALL_COLUMNS - 1, 'gemm_rows64_bf16'],
    [17, WIDE_CALL_COLUMNS, 'gemm_rows96_bf16'],
    [64, 12352, 'gemm_rows96_bf16'],
    [64, 2048, 'gemm_rows64_bf16'],
    [16, 12352, 'gemm_rows16k128_bf16'],
  ] as const) {
    assert.equal(gemmTilesFor(rows, outFeatures), kernel.slice(5, -5));
    const { cuda, launches } = standIn();
    gemm(cuda, { ...base, rows, outFeatures, inFeatures: 2048 });
    const split = kernel !== 'gemm_rows96_bf16';
    assert.deepEqual(
      launches.map((launch) => launch.name),
      split ? [kernel, 'gemm_combine'] : [kernel],
      `${rows} rows × ${outFeatures} columns`,
    );
    assert.equal(gemmWorkspaceBytes(rows, outFeatures, 2048, gemmTilesFor(rows, outFeatures)) > 0, split);
    // Unasked, the workspace covers a split up to 64 rows: on a Hopper GPU wide calls of up to 32 rows split.
    assert.ok(gemmWorkspaceBytes(rows, outFeatures, 2048) > 0, `${rows} rows × ${outFeatures} columns`);
  }
});

test('on a Hopper GPU a split call of 17 to 64 rows runs on the wgmma tiles, 128 columns wide where that fills the GPU', () => {
  const hopper: readonly [number, number] = [9, 0];
  for (const [rows, inFeatures, outFeatures, computeCapability, kernel, sharedBytes] of [
    // 16 column tiles × 16 chunks = 256 blocks of 128 columns.
    [64, 4096, 2048, hopper, 'gemm_wg64x128_bf16', 2 * 2 * (64 + 128) * 128 + 1024],
    [17, 4096, 2048, hopper, 'gemm_wg64x128_bf16', 2 * 2 * (64 + 128) * 128 + 1024],
    // 16 column tiles × 4 chunks = 64 blocks of 128 columns: fewer than the 132 multiprocessors.
    [64, 512, 2048, hopper, 'gemm_wg64x64_bf16', 3 * 2 * (64 + 64) * 128 + 1024],
    [64, 2048, 12352, hopper, 'gemm_rows96_bf16', undefined],
    [33, 2048, 12352, hopper, 'gemm_rows96_bf16', undefined],
    // A wide call of up to WGMMA_WIDE_ROWS rows splits on the wgmma tiles too.
    [32, 2048, 12352, hopper, 'gemm_wg64x128_bf16', 2 * 2 * (64 + 128) * 128 + 1024],
    [17, 2048, 12288, hopper, 'gemm_wg64x128_bf16', 2 * 2 * (64 + 128) * 128 + 1024],
    [16, 4096, 2048, hopper, 'gemm_rows16k128_bf16', undefined],
    [64, 4096, 2048, [8, 9] as const, 'gemm_rows64_bf16', undefined],
    [64, 4096, 2048, [10, 0] as const, 'gemm_rows64_bf16', undefined],
  ] as const) {
    const { cuda, launches } = standIn(computeCapability);
    gemm(cuda, { ...base, rows, outFeatures, inFeatures });
    const label = `${rows} rows ${inFeatures}→${outFeatures} on ${computeCapability.join('.')}`;
    assert.equal(launches[0]!.name, kernel, label);
    if (sharedBytes !== undefined) assert.equal(launches[0]!.sharedLimit, sharedBytes, label);
    if (kernel.startsWith('gemm_wg')) {
      const columns = kernel === 'gemm_wg64x128_bf16' ? 128 : 64;
      assert.deepEqual(launches[0]!.shape.grid, [
        Math.ceil(outFeatures / columns),
        1,
        gemmChunks(outFeatures, inFeatures),
      ]);
      assert.deepEqual(launches[0]!.shape.block, [128, 1, 1]);
      assert.deepEqual(
        launches.map((launch) => launch.name),
        [kernel, 'gemm_combine'],
        label,
      );
    }
  }
});

test('DRAMA3_GEMM_WGMMA=off keeps a Hopper GPU on the mma.sync tiles, and segmented calls pick as single ones', () => {
  const segments = (rows: number, cuda: CudaContext) =>
    gemmSegments(cuda, {
      x: 0x1000n,
      rows,
      inFeatures: 2048,
      workspace: 0x100000n,
      segments: [8192, 512, 512].map((outFeatures, index) => ({
        y: BigInt(0x2000000 * (index + 1)),
        w: BigInt(0x40000000 * (index + 1)),
        outFeatures,
      })),
    });
  const hopper = standIn([9, 0]);
  segments(64, hopper.cuda);
  assert.equal(hopper.launches[0]!.name, 'gemm_segments_wg64x128_bf16');
  const previous = process.env.DRAMA3_GEMM_WGMMA;
  process.env.DRAMA3_GEMM_WGMMA = 'off';
  try {
    const off = standIn([9, 0]);
    segments(64, off.cuda);
    gemm(off.cuda, { ...base, rows: 64, outFeatures: 2048, inFeatures: 4096 });
    assert.deepEqual(
      off.launches.map((launch) => launch.name),
      ['gemm_segments_rows64_bf16', 'gemm_segments_combine', 'gemm_rows64_bf16', 'gemm_combine'],
    );
  } finally {
    if (previous === undefined) delete process.env.DRAMA3_GEMM_WGMMA;
    else process.env.DRAMA3_GEMM_WGMMA = previous;
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
  assert.equal(launches[0]!.name, 'gemm_rows16k128_bf16');
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

const segmented: GemmSegmentsArguments = {
  x: 0x2000n,
  rows: 1,
  inFeatures: 2048,
  workspace: 0x4000n,
  segments: [
    { y: 0x10000n, w: 0x20000n, outFeatures: 12352 },
    { y: 0x11000n, w: 0x21000n, outFeatures: 4097, output: 'f32' },
    { y: 0x12000n, w: 0x22000n, outFeatures: 512 },
    { y: 0x13000n, w: 0x23000n, outFeatures: 32 },
  ],
};

function segmentRefusal(change: Partial<GemmSegmentsArguments>, param: string) {
  const { cuda, launches } = standIn();
  assert.throws(
    () => gemmSegments(cuda, { ...segmented, ...change }),
    (error: { code?: string; param?: string }) => error.code === 'KERNEL_ARGUMENT_INVALID' && error.param === param,
    `expected KERNEL_ARGUMENT_INVALID naming ${param}`,
  );
  assert.equal(launches.length, 0, 'nothing launched');
}

test('bad segmented GEMM arguments are refused, naming the segment and the argument', () => {
  const [first, second, third] = segmented.segments as [
    GemmSegmentsArguments['segments'][0],
    GemmSegmentsArguments['segments'][0],
    GemmSegmentsArguments['segments'][0],
  ];
  segmentRefusal({ segments: [] }, 'segments');
  segmentRefusal({ segments: [...segmented.segments, first] }, 'segments');
  segmentRefusal({ segments: [first, { ...second, w: second.w + 8n }] }, 'segments[1].w');
  segmentRefusal({ segments: [first, second, { ...third, y: third.y + 4n }] }, 'segments[2].y');
  segmentRefusal({ segments: [{ ...first, outFeatures: 0 }] }, 'segments[0].outFeatures');
  segmentRefusal({ segments: [{ ...first, output: 'f16' as 'f32' }] }, 'segments[0].output');
  segmentRefusal({ x: 0x2008n }, 'x');
  segmentRefusal({ inFeatures: 1001 }, 'inFeatures');
  segmentRefusal({ rows: 0 }, 'rows');
  segmentRefusal({ workspace: undefined }, 'workspace');
  segmentRefusal({ workspace: 0x4008n }, 'workspace');
});

const int32At = (table: BigUint64Array, index: number) => koffi.decode(table[index]!, 'int32_t') as number;
const wordAt = (table: BigUint64Array, index: number) => BigInt(koffi.decode(table[index]!, 'int64_t'));

test('one segmented launch carries every segment with the K chunking and tiles its own GEMM would get', () => {
  // The four segments' 16993 columns make 17 to 64 rows a wide call (rows96); without the 12352-column one, rows64.
  const narrow = { ...segmented, segments: segmented.segments.slice(1) };
  for (const [rows, tiles, blockColumns, split, call] of [
    [1, 'rows16', 64, true, segmented],
    [16, 'rows16', 64, true, segmented],
    [17, 'rows64', 64, true, narrow],
    [64, 'rows64', 64, true, narrow],
    [17, 'rows96', 128, false, segmented],
    [64, 'rows96', 128, false, segmented],
    [65, 'rows96', 128, false, segmented],
    [257, 'rows96', 128, false, segmented],
  ] as const) {
    const { cuda, launches, parameters } = standIn();
    const args: GemmSegmentsArguments = { ...call, rows };
    gemmSegments(cuda, args);
    // The same launch alone, per segment: its kernel, block, shared memory and chunk count.
    // The 4097-column segment's chunks are not whole 128-element tiles, so decode rows stage 64 (rows16) throughout.
    const alone = args.segments.map((segment) => {
      const separate = standIn();
      const y = segment.y;
      const a = { ...args, y, w: segment.w, outFeatures: segment.outFeatures, output: segment.output };
      gemm(separate.cuda, a, { tiles });
      return separate.launches[0]!;
    });
    const [main] = launches as [Recorded];
    assert.equal(main.name, `gemm_segments_${tiles}_bf16`);
    assert.deepEqual(main.shape.block, alone[0]!.shape.block);
    assert.equal(main.shape.sharedBytes, alone[0]!.shape.sharedBytes);
    assert.equal(main.sharedLimit, alone[0]!.sharedLimit);
    const columnTiles = args.segments.reduce((sum, s) => sum + Math.ceil(s.outFeatures / blockColumns), 0);
    const chunks = alone.map((launch) => launch.shape.grid[2]);
    const rowTiles = split ? alone[0]!.shape.grid[1] : alone[0]!.shape.grid[0];
    assert.deepEqual(
      main.shape.grid,
      split ? [columnTiles, rowTiles, Math.max(...chunks)] : [rowTiles, columnTiles, 1],
    );
    assert.deepEqual(
      launches.map((launch) => launch.name),
      split ? [main.name, 'gemm_segments_combine'] : [main.name],
    );
    const table = parameters[0]!;
    assert.deepEqual([int32At(table, 2), int32At(table, 3), int32At(table, 4)], [rows, 2048, split ? 1 : 0]);
    const fp32Mask = args.segments.reduce((mask, s, index) => mask | ((s.output === 'f32' ? 1 : 0) << index), 0);
    assert.equal(int32At(table, 5), fp32Mask, 'the 4097-column segment writes fp32');
    args.segments.forEach((segment, index) => {
      const at = 6 + 4 * index;
      assert.deepEqual([wordAt(table, at), wordAt(table, at + 1)], [segment.y, segment.w]);
      assert.equal(int32At(table, at + 2), segment.outFeatures);
      assert.equal(int32At(table, at + 3), gemmChunkTiles(segment.outFeatures, 2048), `segment ${index} chunking`);
    });
    const partials = chunks.reduce(
      (sum, c, index) =>
        sum + (split && c > 1 ? Math.ceil((c * rows * args.segments[index]!.outFeatures) / 4) * 16 : 0),
      0,
    );
    const widths = args.segments.map((segment) => segment.outFeatures);
    assert.equal(gemmSegmentsWorkspaceBytes(rows, 2048, widths, tiles), partials);
    // Unasked, the workspace covers a split up to 64 rows (the pick also depends on the GPU), and no more beyond.
    const anyPick = rows <= 64 ? gemmSegmentsWorkspaceBytes(rows, 2048, widths, 'rows16') : partials;
    assert.equal(gemmSegmentsWorkspaceBytes(rows, 2048, widths), anyPick);
  }
});

test('decode rows stage 128 K elements where K and every chunk are whole tiles of it, else rows16', () => {
  const staged = 2 * (16 + 64) * (128 + 8) * 2;
  for (const [inFeatures, outFeatures, kernel, shared] of [
    [4096, 2048, 'gemm_rows16k128_bf16', staged],
    [2048, 12352, 'gemm_rows16k128_bf16', staged],
    [2048, 4097, 'gemm_rows16_bf16', 4 * (16 + 64) * 72 * 2],
    [1000, 999, 'gemm_rows16_bf16', 4 * (16 + 64) * 72 * 2],
  ] as const) {
    const { cuda, launches } = standIn();
    gemm(cuda, { ...base, rows: 1, outFeatures, inFeatures });
    assert.equal(launches[0]!.name, kernel, `${inFeatures}→${outFeatures}`);
    assert.equal(launches[0]!.shape.sharedBytes, shared);
    assert.equal(launches[0]!.shape.grid[2], gemmChunks(outFeatures, inFeatures), 'the same K chunks');
  }
  const { cuda, launches } = standIn();
  const inputs = [8192, 4096, 32, 32].map((outFeatures, index) => ({
    y: 0x10000n + BigInt(index) * 0x1000n,
    w: 0x20000n + BigInt(index) * 0x1000n,
    outFeatures,
  }));
  gemmSegments(cuda, { ...segmented, segments: inputs });
  assert.equal(launches[0]!.name, 'gemm_segments_rows16k128_bf16');
  assert.equal(launches[0]!.shape.sharedBytes, staged);
});

test('unused segment slots are empty, and a launch whose segments do not split K needs no combine', () => {
  const { cuda, launches, parameters } = standIn();
  gemmSegments(cuda, { ...segmented, inFeatures: 64, workspace: undefined, segments: segmented.segments.slice(0, 2) });
  assert.deepEqual(
    launches.map((launch) => launch.name),
    ['gemm_segments_rows16_bf16'],
  );
  const table = parameters[0]!;
  for (const index of [2, 3]) {
    const at = 6 + 4 * index;
    assert.deepEqual([wordAt(table, at), wordAt(table, at + 1), int32At(table, at + 2)], [0n, 0n, 0]);
  }
  assert.equal(gemmSegmentsWorkspaceBytes(1, 64, [12352, 4097]), 0);
});

test('a replacement segmented kernel runs on rows16 geometry with the split the row count would pick', () => {
  const { cuda, launches, parameters } = standIn();
  const kernel = { family: 'gemm_controls', name: 'control_gemm_segments_shared_chunking' };
  gemmSegments(cuda, { ...segmented, rows: 257, workspace: undefined }, { kernel });
  assert.deepEqual(
    launches.map((launch) => launch.name),
    [kernel.name],
  );
  const columnTiles = segmented.segments.reduce((sum, s) => sum + Math.ceil(s.outFeatures / 64), 0);
  assert.deepEqual(launches[0]!.shape.grid, [columnTiles, 17, 1]);
  assert.equal(int32At(parameters[0]!, 4), 0, 'K chunks in registers, as rows96 keeps them');
});
