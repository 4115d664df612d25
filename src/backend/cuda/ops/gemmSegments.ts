// Launcher for the segmented GEMM (kernels/cuda/gemm_segments.cuh): y_s[rows, outFeatures_s] = x · w_sᵀ for up to
// GEMM_MOST_SEGMENTS projections that read the same x, in one launch (and one gemm_segments_combine when any
// segment splits K) instead of one GEMM and one combine each. Every segment keeps the K chunking and the tile
// configuration its own gemm() launch would get, so each output has that launch's bits. With `leaveCombine`, a split
// launch's combine is returned to the caller instead, for a consumer that combines the partials itself (swiglu.ts).
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import {
  COMBINE_MAX_BLOCKS,
  COMBINE_THREADS,
  columnsOf,
  GEMM_CONFIGURATIONS,
  type GemmOptions,
  type GemmTiles,
  gemmChunkTiles,
  gemmSharedBytes,
  gemmSplits,
  gemmTilesFor,
  invalid,
  launchTiles,
  raiseSharedLimit,
  requireAligned,
  stagedTiles,
} from './gemm.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

/** Segments one launch carries (the kernels' parameter list has this many). */
export const GEMM_MOST_SEGMENTS = 4;
/** GEMM_SEGMENT_PARAMETERS: the shared ones, then (y, w, N, chunk tiles) per segment. */
export const GEMM_SEGMENT_PARAMETER_COUNT = 6 + 4 * GEMM_MOST_SEGMENTS;

const FAMILY = 'gemm';
const KERNELS: Readonly<Record<GemmTiles, KernelName>> = {
  rows16: { family: FAMILY, name: 'gemm_segments_rows16_bf16' },
  rows16k128: { family: FAMILY, name: 'gemm_segments_rows16k128_bf16' },
  rows64: { family: FAMILY, name: 'gemm_segments_rows64_bf16' },
  rows96: { family: FAMILY, name: 'gemm_segments_rows96_bf16' },
  wgmma128: { family: FAMILY, name: 'gemm_segments_wg64x128_bf16' },
  wgmma64: { family: FAMILY, name: 'gemm_segments_wg64x64_bf16' },
};
const COMBINE_KERNEL: KernelName = { family: FAMILY, name: 'gemm_segments_combine' };

export interface GemmSegment {
  readonly y: DevicePointer;
  readonly w: DevicePointer;
  readonly outFeatures: number;
  /** bf16 (default): one rounding; f32: the fp32 sum itself. */
  readonly output?: 'bf16' | 'f32';
}

export interface GemmSegmentsArguments {
  readonly x: DevicePointer;
  readonly rows: number;
  readonly inFeatures: number;
  readonly segments: readonly GemmSegment[];
  /** fp32 scratch of gemmSegmentsWorkspaceBytes(...) bytes, 16-byte aligned; needed only when that is not 0. */
  readonly workspace?: DevicePointer;
}

/** Floats of one segment's partials, rounded up to 16 bytes as the kernel places them (0: the segment does not split). */
function partialFloats(rows: number, outFeatures: number, splits: number): number {
  return splits > 1 ? Math.ceil((splits * rows * outFeatures) / 4) * 4 : 0;
}

/**
 * Bytes the segmented launch needs in `workspace`: every split segment's fp32 partials, one after another; by default
 * as much as any configuration needs at these rows (up to 64 rows a split one, as gemmWorkspaceBytes).
 */
export function gemmSegmentsWorkspaceBytes(
  rows: number,
  inFeatures: number,
  outFeatures: readonly number[],
  tiles: GemmTiles = rows <= 64 ? 'rows16' : gemmTilesFor(rows, columnsOf(outFeatures)),
): number {
  let floats = 0;
  for (const n of outFeatures) floats += partialFloats(rows, n, gemmSplits(tiles, n, inFeatures));
  return floats * 4;
}

export type GemmSegmentsOptions = Omit<GemmOptions, 'combine'> & {
  /** Where K splits, launch no combine: return it (LeftCombine) for the caller to run, or to fuse with its consumer. */
  readonly leaveCombine?: boolean;
};

/** The combine a split launch left to its caller: which segments split, and the partials' parameters. */
export interface LeftCombine {
  readonly rows: number;
  readonly outFeatures: readonly number[];
  readonly outputs: readonly ('bf16' | 'f32')[];
  /** K chunks of each segment; one whose count is 1 was written by the tile kernel. */
  readonly chunks: readonly number[];
  /** Appends the combine's parameters (GEMM_SEGMENT_PARAMETERS, the tile kernel's own) to `args`. */
  appendParameters(args: KernelArguments): KernelArguments;
}

function checkSegment(segment: GemmSegment, index: number, rows: number): void {
  const name = `segments[${index}]`;
  requireCount(segment.outFeatures, `${name}.outFeatures`, 1, 1 << 24);
  if (rows * segment.outFeatures > 2 ** 31 - 1) {
    throw invalid(name, `rows × outFeatures must stay below 2^31, got ${rows} × ${segment.outFeatures}`);
  }
  const output = segment.output ?? 'bf16';
  if (output !== 'bf16' && output !== 'f32') {
    throw invalid(`${name}.output`, `output must be bf16 or f32, got ${String(output)}`);
  }
  requireAligned(segment.w, 16, `${name}.w`);
  requireAligned(segment.y, 8, `${name}.y`);
}

/** Launches the segmented GEMM and, where K splits, its combine; with `leaveCombine` returns that combine instead. */
export function gemmSegments(
  cuda: CudaContext,
  a: GemmSegmentsArguments,
  options: GemmSegmentsOptions = {},
): LeftCombine | undefined {
  requireCount(a.rows, 'rows', 1, 1 << 22);
  requireCount(a.inFeatures, 'inFeatures', 8, 1 << 20);
  if (a.inFeatures % 8 !== 0) throw invalid('inFeatures', `inFeatures must be a multiple of 8, got ${a.inFeatures}`);
  const count = a.segments.length;
  if (count < 1 || count > GEMM_MOST_SEGMENTS) {
    throw invalid('segments', `a segmented GEMM takes 1 to ${GEMM_MOST_SEGMENTS} segments, got ${count}`);
  }
  for (const [index, segment] of a.segments.entries()) checkSegment(segment, index, a.rows);
  requireAligned(a.x, 16, 'x');
  const outFeatures = a.segments.map((segment) => segment.outFeatures);
  const tiles = options.tiles ?? launchTiles(cuda, a.rows, a.inFeatures, outFeatures);
  if (!(tiles in GEMM_CONFIGURATIONS)) {
    throw invalid('tiles', `tiles must be one of ${Object.keys(GEMM_CONFIGURATIONS).join(', ')}, got ${String(tiles)}`);
  }
  // A replacement kernel keeps the split the picked configuration would make on rows16's geometry (as gemm() does).
  const staged = stagedTiles(
    tiles,
    a.inFeatures,
    outFeatures.map((n) => gemmChunkTiles(n, a.inFeatures)),
  );
  const configuration = GEMM_CONFIGURATIONS[options.kernel ? 'rows16' : staged];
  const splitK = GEMM_CONFIGURATIONS[tiles].splitK;
  const chunks = outFeatures.map((n) => gemmSplits(tiles, n, a.inFeatures));
  const mostChunks = Math.max(...chunks);
  const workspace = a.workspace ?? 0n;
  if (mostChunks > 1) {
    if (workspace === 0n) {
      const bytes = gemmSegmentsWorkspaceBytes(a.rows, a.inFeatures, outFeatures, tiles);
      throw invalid(
        'workspace',
        `a segment splits K into ${mostChunks} chunks: the launch needs a ${bytes}-byte workspace`,
      );
    }
    requireAligned(workspace, 16, 'workspace');
  }
  const kernel = KERNELS[staged];
  const chosen = options.kernel ?? kernel;
  const sharedBytes = gemmSharedBytes(configuration);
  cuda.kernels.prepareOnce(cuda.kernels.kernel(chosen.family, chosen.name), (driver, handle) =>
    raiseSharedLimit(driver, handle, sharedBytes),
  );
  const args = appendSegmentArguments(new KernelArguments(GEMM_SEGMENT_PARAMETER_COUNT), a, workspace, splitK);
  const rowTiles = Math.ceil(a.rows / configuration.blockRows);
  const columnTiles = outFeatures.reduce((sum, n) => sum + Math.ceil(n / configuration.blockColumns), 0);
  const grid = configuration.rowsFastest
    ? ([rowTiles, columnTiles, mostChunks] as const)
    : ([columnTiles, rowTiles, mostChunks] as const);
  if (grid[1] > 65535) throw invalid('rows', `${a.rows} rows × ${columnTiles} column tiles need a grid.y over 65535`);
  const shape = { grid, block: [configuration.threads, 1, 1], sharedBytes } as const;
  launch(cuda, kernel, shape, args, options);
  if (mostChunks === 1) return undefined;
  const left: LeftCombine = {
    rows: a.rows,
    outFeatures,
    outputs: a.segments.map((segment) => segment.output ?? 'bf16'),
    chunks,
    appendParameters: (target) => appendSegmentArguments(target, a, workspace, splitK),
  };
  if (options.leaveCombine) return left;
  gemmSegmentsCombine(cuda, left, { stream: options.stream, dependentLaunch: options.dependentLaunch });
  return undefined;
}

/** Threads for `elements` combined elements: one each, at most COMBINE_MAX_BLOCKS blocks. */
export function combineShape(elements: number) {
  const blocks = Math.min(COMBINE_MAX_BLOCKS, Math.ceil(elements / COMBINE_THREADS));
  return { grid: [blocks, 1, 1], block: [COMBINE_THREADS, 1, 1] } as const;
}

/** Elements of the split segments: each one thread of the combine. */
export function splitElements(left: LeftCombine): number {
  return left.outFeatures.reduce((sum, n, index) => sum + (left.chunks[index]! > 1 ? left.rows * n : 0), 0);
}

/** gemm_segments_combine over a launch's split segments: each element's chunks in ascending order, one rounding. */
export function gemmSegmentsCombine(cuda: CudaContext, left: LeftCombine, options: LaunchOptions = {}): void {
  const args = left.appendParameters(new KernelArguments(GEMM_SEGMENT_PARAMETER_COUNT));
  launch(cuda, COMBINE_KERNEL, combineShape(splitElements(left)), args, options);
}

/** The parameters both kernels take: the shared ones, then (y, w, N, chunk tiles) per segment, unused ones empty. */
function appendSegmentArguments(
  args: KernelArguments,
  a: GemmSegmentsArguments,
  workspace: DevicePointer,
  splitK: boolean,
): KernelArguments {
  const fp32Mask = a.segments.reduce((mask, segment, index) => mask | ((segment.output === 'f32' ? 1 : 0) << index), 0);
  args
    .pointer(a.x)
    .pointer(workspace)
    .int32(a.rows)
    .int32(a.inFeatures)
    .int32(splitK ? 1 : 0)
    .int32(fp32Mask);
  for (let index = 0; index < GEMM_MOST_SEGMENTS; index++) {
    const segment = a.segments[index];
    args
      .pointer(segment?.y ?? 0n)
      .pointer(segment?.w ?? 0n)
      .int32(segment?.outFeatures ?? 0)
      .int32(segment ? gemmChunkTiles(segment.outFeatures, a.inFeatures) : 1);
  }
  return args;
}
