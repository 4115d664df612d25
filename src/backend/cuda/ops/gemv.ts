// Launcher for kernels/cuda/gemv.cu: y[rows, outFeatures] = x[rows, inFeatures] · w[outFeatures, inFeatures]ᵀ, all
// bf16, fp32 accumulation. Meant for one-row decode projections; a row beyond the first re-reads the weights, so
// prefill-sized inputs go to cuBLASLt (cublaslt.ts) instead.
import type { CudaContext } from '../context.ts';
import type { CudaDriver, DevicePointer, Handle } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

const GEMV_KERNEL: KernelName = { family: 'gemv', name: 'gemv_bf16' };
const GEMV_STAGED_KERNEL: KernelName = { family: 'gemv', name: 'gemv_staged_bf16' };

const WARPS_PER_BLOCK = 8;
/** Rows of weights per shared-memory tile (one per warp); the staged path takes rows up to this many elements. */
const TILE_ROWS = WARPS_PER_BLOCK;
const STAGED_MAX_IN_FEATURES = 4096;
const STAGED_MAX_SHARED_BYTES = 2 * TILE_ROWS * STAGED_MAX_IN_FEATURES * 2;

export interface GemvOptions extends LaunchOptions {
  /** Tuning: blocks per multiprocessor (1 to 6). */
  readonly blocksPerMultiprocessor?: number;
  /** Tuning: weight tiles in flight per block on the staged path (1 to 3; rows over 2048 elements take 2). */
  readonly stages?: number;
}

// Measured best on the H200 for 2048-wide rows (docs/gpu.md): three blocks of two 32 KiB tiles each.
const DEFAULT_BLOCKS_PER_MULTIPROCESSOR = 3;
const DEFAULT_STAGES = 2;

export function gemv(
  cuda: CudaContext,
  a: { y: DevicePointer; w: DevicePointer; x: DevicePointer; rows: number; outFeatures: number; inFeatures: number },
  options: GemvOptions = {},
): void {
  requireCount(a.rows, 'rows', 1, 65535);
  requireCount(a.outFeatures, 'outFeatures');
  requireCount(a.inFeatures, 'inFeatures');
  const staged = (a.w | a.x) % 16n === 0n && a.inFeatures % 8 === 0 && a.inFeatures <= STAGED_MAX_IN_FEATURES;
  const stages = staged ? (a.inFeatures <= 2048 ? (options.stages ?? DEFAULT_STAGES) : 2) : 0;
  if (staged) requireCount(stages, 'stages', 1, 3);
  const sharedBytes = stages * TILE_ROWS * a.inFeatures * 2;
  const kernel = options.kernel ?? (staged ? GEMV_STAGED_KERNEL : GEMV_KERNEL);
  if (stages > 0) cuda.kernels.prepareOnce(cuda.kernels.kernel(kernel.family, kernel.name), raiseSharedLimit);
  const args = new KernelArguments()
    .pointer(a.y)
    .pointer(a.w)
    .pointer(a.x)
    .int32(a.outFeatures)
    .int32(a.inFeatures)
    .int32(a.rows);
  if (staged) args.int32(stages);
  // A fixed number of blocks per multiprocessor walk the row tiles; rows over 2048 elements keep 128 KiB of tiles in
  // flight per block, and only one such block fits a multiprocessor.
  const perMultiprocessor =
    options.blocksPerMultiprocessor ?? (a.inFeatures <= 2048 ? DEFAULT_BLOCKS_PER_MULTIPROCESSOR : 1);
  requireCount(perMultiprocessor, 'blocksPerMultiprocessor', 1, 6);
  const blocks = Math.min(Math.ceil(a.outFeatures / TILE_ROWS), perMultiprocessor * cuda.properties.multiprocessors);
  const shape = { grid: [blocks, a.rows, 1], block: [WARPS_PER_BLOCK * 32, 1, 1], sharedBytes } as const;
  launch(cuda, kernel, shape, args, options);
}

function raiseSharedLimit(driver: CudaDriver, kernel: Handle): void {
  driver.setMaxDynamicSharedBytes(kernel, STAGED_MAX_SHARED_BYTES);
  // All of L1 as shared memory, so that several blocks' tiles (a dependent launch's too) fit at once.
  driver.setPreferredSharedCarveout(kernel, 100);
}
