// Launcher for kernels/cuda/gemm.cu: y[rows, outFeatures] = x[rows, inFeatures] · w[outFeatures, inFeatures]ᵀ, bf16
// in, fp32 accumulation on tensor cores, one rounding to bf16 out (or fp32 out). One kernel family for every row
// count: the K chunks depend on (outFeatures, inFeatures) only, so a row's bits never depend on how many rows share
// the call. The row count picks only the tile configuration and whether chunks run on separate blocks (fp32
// partials in `workspace`, added in order by gemm_combine) or in one block's registers: the same additions either way.
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import type { CudaDriver, DevicePointer, Handle } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

const FAMILY = 'gemm';
const COMBINE_KERNEL: KernelName = { family: FAMILY, name: 'gemm_combine' };

/** K elements per staged tile (GEMM_BK) and the padded shared-memory row (GEMM_ROW_ELEMENTS). */
const K_TILE = 64;
const SHARED_ROW_ELEMENTS = K_TILE + 8;
/** The wgmma tiles' stages start 1024-byte aligned (GEMM_WG_ALIGN): the slack for that. */
const SWIZZLE_ALIGNMENT = 1024;

export type GemmTiles = 'rows16' | 'rows16k128' | 'rows64' | 'rows96' | 'wgmma64' | 'wgmma128';

export interface TileConfiguration {
  readonly kernel: KernelName;
  readonly blockRows: number;
  readonly blockColumns: number;
  readonly threads: number;
  readonly stages: number;
  /** Chunks of K on separate blocks (partials) rather than summed in one block's registers. */
  readonly splitK: boolean;
  /** grid.x walks row tiles and grid.y column tiles (the kernel's ROWS_FASTEST); otherwise the reverse. */
  readonly rowsFastest: boolean;
  /** K elements staged per tile (64 unless said); a larger tile needs K and every chunk to be whole tiles of it. */
  readonly kTile?: number;
  /**
   * wgmma tiles (sm_90a) only: the 64-element K tiles a stage holds, in unpadded 128-byte-swizzled rows, the stages
   * aligned to 1024 bytes.
   */
  readonly wgmmaStageTiles?: number;
}

/**
 * A wgmma configuration (sm_90a): one warpgroup holding a 64 × `columns` tile, two 64-element K tiles a stage, every
 * chunk on its own block.
 */
function wgmmaTiles(columns: 64 | 128, stages: number): TileConfiguration {
  return {
    kernel: { family: FAMILY, name: `gemm_wg64x${columns}_bf16` },
    blockRows: 64,
    blockColumns: columns,
    threads: 128,
    stages,
    splitK: true,
    rowsFastest: false,
    wgmmaStageTiles: 2,
  };
}

export const GEMM_CONFIGURATIONS: Readonly<Record<GemmTiles, TileConfiguration>> = {
  rows16: {
    kernel: { family: FAMILY, name: 'gemm_rows16_bf16' },
    blockRows: 16,
    blockColumns: 64,
    threads: 128,
    stages: 4,
    splitK: true,
    rowsFastest: false,
  },
  // rows16 staging 128 K elements a tile, 2 stages: longer contiguous weight reads at one row (the same bits).
  rows16k128: {
    kernel: { family: FAMILY, name: 'gemm_rows16k128_bf16' },
    blockRows: 16,
    blockColumns: 64,
    threads: 128,
    stages: 2,
    splitK: true,
    rowsFastest: false,
    kTile: 128,
  },
  rows64: {
    kernel: { family: FAMILY, name: 'gemm_rows64_bf16' },
    blockRows: 64,
    blockColumns: 64,
    threads: 128,
    stages: 4,
    splitK: true,
    rowsFastest: false,
  },
  rows96: {
    kernel: { family: FAMILY, name: 'gemm_rows96_bf16' },
    blockRows: 96,
    blockColumns: 128,
    threads: 384,
    stages: 3,
    splitK: false,
    rowsFastest: true,
  },
  wgmma128: wgmmaTiles(128, 2),
  wgmma64: wgmmaTiles(64, 3),
};

/**
 * At most this many blocks when one row streams the weights: one wave at four rows16 blocks per multiprocessor of an
 * H200 (528), so no second wave of a few blocks streams alone at the end.
 */
const CHUNK_TARGET_BLOCKS = 512;
/** The kernels hold this many chunks' partials in registers at once (GEMM_MOST_CHUNKS). */
const MAX_CHUNKS = 16;
/** A chunk is at least two K tiles (128 elements), so a split never makes blocks that only fill the pipeline. */
const MIN_CHUNK_TILES = 2;
export const COMBINE_THREADS = 256;
export const COMBINE_MAX_BLOCKS = 4096;

/** K tiles per chunk: a function of (outFeatures, inFeatures) alone, never of the row count. */
export function gemmChunkTiles(outFeatures: number, inFeatures: number): number {
  const kTiles = Math.ceil(inFeatures / K_TILE);
  const columnTiles = Math.ceil(outFeatures / GEMM_CONFIGURATIONS.rows16.blockColumns);
  const wanted = Math.max(
    1,
    Math.min(MAX_CHUNKS, Math.floor(CHUNK_TARGET_BLOCKS / columnTiles), Math.floor(kTiles / MIN_CHUNK_TILES)),
  );
  return Math.ceil(kTiles / wanted);
}

export function gemmChunks(outFeatures: number, inFeatures: number): number {
  return Math.ceil(Math.ceil(inFeatures / K_TILE) / gemmChunkTiles(outFeatures, inFeatures));
}

/**
 * Output columns (of all a call's segments together) from which a call of 17 to 64 rows runs unsplit on rows96 tiles:
 * its 96 or more blocks of 128 columns each stream their weights once, with no partials written and read back by a
 * combine. bench/gpu-gemm-decode.ts on the H200 at 64 rows: the DeltaNet inputs (12352 columns) 36.5 µs against 48.9
 * split on rows64, the tower's gate|up (12288) 35.9 against 46.9; narrower calls were faster split.
 */
export const WIDE_CALL_COLUMNS = 12288;

/**
 * The configuration the launcher picks for `rows` and the call's output columns (bench and tests may force another:
 * the bits are the same).
 */
export function gemmTilesFor(rows: number, columns = 0): GemmTiles {
  if (rows <= 16) return 'rows16k128';
  if (rows <= 64 && columns < WIDE_CALL_COLUMNS) return 'rows64';
  return 'rows96';
}

/** The output columns of all of a launch's segments (or of one GEMM): what picks its tiles. */
export function columnsOf(outFeatures: readonly number[]): number {
  return outFeatures.reduce((sum, n) => sum + n, 0);
}

/**
 * Whether calls of 17 to 64 rows run on the wgmma tiles: on a Hopper GPU (their kernels are sm_90a machine code), unless
 * DRAMA3_GEMM_WGMMA=off (the mma.sync tiles, for side-by-side measurement: the bits are the same).
 */
export function wgmmaAvailable(cuda: CudaContext): boolean {
  const [major, minor] = cuda.properties?.computeCapability ?? [0, 0];
  return major === 9 && minor === 0 && process.env.DRAMA3_GEMM_WGMMA !== 'off';
}

/**
 * Rows up to which a wide call (WIDE_CALL_COLUMNS) also runs split on the wgmma tiles rather than unsplit on rows96:
 * bench/gpu-gemm-decode.ts on the H200, the DeltaNet inputs at 32 rows 31.7 against 36.1 µs, at 64 rows 41.4 against 36.2.
 */
export const WGMMA_WIDE_ROWS = 32;

/**
 * The tiles of a call: gemmTilesFor's, except that on a Hopper GPU a call of 17 to 64 rows (of 17 to WGMMA_WIDE_ROWS
 * when wide) runs split on the wgmma tiles, 128 columns a block where that still gives every multiprocessor a block,
 * else 64 (the same chunks, so the same bits: bench/gpu-gemm-decode.ts on the H200 timed each projection of the step
 * at 17, 32 and 64 rows).
 */
export function launchTiles(cuda: CudaContext, rows: number, inFeatures: number, outFeatures: readonly number[]) {
  const tiles = gemmTilesFor(rows, columnsOf(outFeatures));
  if (rows <= 16 || rows > 64 || !wgmmaAvailable(cuda)) return tiles;
  if (tiles === 'rows96' && rows > WGMMA_WIDE_ROWS) return tiles;
  const wideBlocks = outFeatures.reduce((sum, n) => sum + Math.ceil(n / 128) * gemmChunks(n, inFeatures), 0);
  return wideBlocks >= cuda.properties.multiprocessors ? 'wgmma128' : 'wgmma64';
}

/** K chunks on separate blocks for one GEMM of this shape under `tiles` (1: summed in registers, or not split). */
export function gemmSplits(tiles: GemmTiles, outFeatures: number, inFeatures: number): number {
  return GEMM_CONFIGURATIONS[tiles].splitK ? gemmChunks(outFeatures, inFeatures) : 1;
}

function partialBytes(rows: number, outFeatures: number, chunks: number): number {
  return chunks * rows * outFeatures * 4;
}

/**
 * Bytes the launch needs in `workspace` (0: none): fp32 partials [chunks, rows, outFeatures], then one int32 counter
 * per block tile (as many as rows16 makes, the most of any split configuration). By default as much as any
 * configuration needs at these rows: up to 64 rows a split one, since the launcher's pick also depends on the GPU.
 * Zero it once when allocated: every launch leaves the counters at zero.
 */
export function gemmWorkspaceBytes(
  rows: number,
  outFeatures: number,
  inFeatures: number,
  tiles: GemmTiles = rows <= 64 ? 'rows16' : gemmTilesFor(rows, outFeatures),
): number {
  const chunks = gemmSplits(tiles, outFeatures, inFeatures);
  if (chunks === 1) return 0;
  const rows16 = GEMM_CONFIGURATIONS.rows16;
  const counters = Math.ceil(rows / rows16.blockRows) * Math.ceil(outFeatures / rows16.blockColumns);
  return partialBytes(rows, outFeatures, chunks) + counters * 4;
}

export interface GemmOptions extends LaunchOptions {
  /**
   * Tuning: force a tile configuration instead of the one for the row count. A replacement `kernel` (the contract's
   * controls) always runs with rows16's geometry.
   */
  readonly tiles?: GemmTiles;
  /**
   * How split partials are added (same order, same bits): by gemm_combine, a second kernel (default), or by the last
   * block of each tile to finish, ordered by a counter in the workspace (one kernel, no second launch). The counters
   * sit after the partials of this call's rows, so a workspace shared by calls of different row counts must not use
   * 'last-block' (a larger call's partials would leave the smaller call's counters non-zero).
   */
  readonly combine?: 'kernel' | 'last-block';
}

export interface GemmArguments {
  readonly y: DevicePointer;
  readonly x: DevicePointer;
  readonly w: DevicePointer;
  /** fp32 scratch of gemmWorkspaceBytes(...) bytes, 16-byte aligned; needed only when that is not 0. */
  readonly workspace?: DevicePointer;
  readonly rows: number;
  readonly outFeatures: number;
  readonly inFeatures: number;
  /** bf16 (default): one rounding; f32: the fp32 sum itself (the logits head). */
  readonly output?: 'bf16' | 'f32';
}

export function invalid(param: string, message: string): DramaError {
  return new DramaError('KERNEL_ARGUMENT_INVALID', message, { kind: 'internal', param });
}

export function requireAligned(pointer: DevicePointer, bytes: number, name: string): void {
  if (pointer % BigInt(bytes) !== 0n)
    throw invalid(name, `${name} must be ${bytes}-byte aligned, got 0x${pointer.toString(16)}`);
}

export function gemm(cuda: CudaContext, a: GemmArguments, options: GemmOptions = {}): void {
  requireCount(a.rows, 'rows', 1, 1 << 22);
  requireCount(a.outFeatures, 'outFeatures', 1, 1 << 24);
  requireCount(a.inFeatures, 'inFeatures', 8, 1 << 20);
  if (a.inFeatures % 8 !== 0) throw invalid('inFeatures', `inFeatures must be a multiple of 8, got ${a.inFeatures}`);
  if (a.rows * a.outFeatures > 2 ** 31 - 1) {
    throw invalid('rows', `rows × outFeatures must stay below 2^31, got ${a.rows} × ${a.outFeatures}`);
  }
  const output = a.output ?? 'bf16';
  if (output !== 'bf16' && output !== 'f32')
    throw invalid('output', `output must be bf16 or f32, got ${String(output)}`);
  requireAligned(a.x, 16, 'x');
  requireAligned(a.w, 16, 'w');
  requireAligned(a.y, 8, 'y');
  const tiles = options.tiles ?? launchTiles(cuda, a.rows, a.inFeatures, [a.outFeatures]);
  if (!(tiles in GEMM_CONFIGURATIONS))
    throw invalid('tiles', `tiles must be one of ${Object.keys(GEMM_CONFIGURATIONS).join(', ')}, got ${String(tiles)}`);
  // A replacement kernel keeps the split the picked configuration would make (so the workspace fits) on rows16's geometry.
  const chunkTiles = gemmChunkTiles(a.outFeatures, a.inFeatures);
  const configuration = GEMM_CONFIGURATIONS[options.kernel ? 'rows16' : stagedTiles(tiles, a.inFeatures, [chunkTiles])];
  const chunks = gemmSplits(tiles, a.outFeatures, a.inFeatures);
  const workspace = a.workspace ?? 0n;
  if (chunks > 1) {
    if (workspace === 0n) {
      const bytes = gemmWorkspaceBytes(a.rows, a.outFeatures, a.inFeatures, tiles);
      throw invalid('workspace', `this launch splits K into ${chunks} chunks and needs a ${bytes}-byte workspace`);
    }
    requireAligned(workspace, 16, 'workspace');
  }
  const chosen = options.kernel ?? configuration.kernel;
  const sharedBytes = gemmSharedBytes(configuration);
  cuda.kernels.prepareOnce(cuda.kernels.kernel(chosen.family, chosen.name), (driver, kernel) =>
    raiseSharedLimit(driver, kernel, sharedBytes),
  );
  const combine = options.combine ?? 'kernel';
  if (combine !== 'kernel' && combine !== 'last-block') {
    throw invalid('combine', `combine must be kernel or last-block, got ${String(combine)}`);
  }
  const counters =
    chunks > 1 && combine === 'last-block' ? workspace + BigInt(partialBytes(a.rows, a.outFeatures, chunks)) : 0n;
  const outputFp32 = output === 'f32' ? 1 : 0;
  const args = new KernelArguments()
    .pointer(a.y)
    .pointer(a.x)
    .pointer(a.w)
    .pointer(workspace)
    .pointer(counters)
    .int32(a.rows)
    .int32(a.outFeatures)
    .int32(a.inFeatures)
    .int32(chunkTiles)
    .int32(outputFp32);
  const rowTiles = Math.ceil(a.rows / configuration.blockRows);
  const columnTiles = Math.ceil(a.outFeatures / configuration.blockColumns);
  const grid = configuration.rowsFastest
    ? ([rowTiles, columnTiles, chunks] as const)
    : ([columnTiles, rowTiles, chunks] as const);
  if (grid[1] > 65535) throw invalid('rows', `${a.rows} rows × ${a.outFeatures} columns need a grid.y over 65535`);
  const shape = { grid, block: [configuration.threads, 1, 1], sharedBytes } as const;
  launch(cuda, configuration.kernel, shape, args, options);
  if (chunks === 1 || counters !== 0n) return;
  const elements = a.rows * a.outFeatures;
  const combineArgs = new KernelArguments()
    .pointer(a.y)
    .pointer(workspace)
    .int32(a.rows)
    .int32(a.outFeatures)
    .int32(chunks)
    .int32(outputFp32);
  const blocks = Math.min(COMBINE_MAX_BLOCKS, Math.ceil(elements / COMBINE_THREADS));
  const combineShape = { grid: [blocks, 1, 1], block: [COMBINE_THREADS, 1, 1] } as const;
  launch(cuda, COMBINE_KERNEL, combineShape, combineArgs, {
    stream: options.stream,
    dependentLaunch: options.dependentLaunch,
  });
}

/**
 * A configuration staging more than 64 K elements a tile only where K and every chunk are whole tiles of it (so each
 * chunk is summed by the same steps); elsewhere its 64-element twin, rows16. The bits are the same either way.
 */
export function stagedTiles(tiles: GemmTiles, inFeatures: number, chunkTiles: readonly number[]): GemmTiles {
  const units = (GEMM_CONFIGURATIONS[tiles].kTile ?? K_TILE) / K_TILE;
  if (units === 1) return tiles;
  const whole = inFeatures % (units * K_TILE) === 0 && chunkTiles.every((c) => c % units === 0);
  return whole ? tiles : 'rows16';
}

/** Dynamic shared memory of a configuration: its stages of x and weight tiles. */
export function gemmSharedBytes(configuration: TileConfiguration): number {
  if (configuration.wgmmaStageTiles !== undefined) {
    const stageBytes = configuration.wgmmaStageTiles * (configuration.blockRows + configuration.blockColumns) * 128;
    return configuration.stages * stageBytes + SWIZZLE_ALIGNMENT;
  }
  const row = (configuration.kTile ?? K_TILE) + SHARED_ROW_ELEMENTS - K_TILE;
  return configuration.stages * (configuration.blockRows + configuration.blockColumns) * row * 2;
}

export function raiseSharedLimit(driver: CudaDriver, kernel: Handle, bytes: number): void {
  driver.setMaxDynamicSharedBytes(kernel, bytes);
  // All of L1 as shared memory, so that several blocks' stages fit a multiprocessor at once.
  driver.setPreferredSharedCarveout(kernel, 100);
}
