// Launcher for kernels/cuda/gemv.cu: y[rows, outFeatures] = x[rows, inFeatures] · w[outFeatures, inFeatures]ᵀ, all
// bf16, fp32 accumulation. Meant for one-row decode projections; a row beyond the first re-reads the weights, so
// prefill-sized inputs go to cuBLASLt (cublaslt.ts) instead.
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

export const GEMV_KERNEL: KernelName = { family: 'gemv', name: 'gemv_bf16' };
export const GEMV_UNALIGNED_KERNEL: KernelName = { family: 'gemv', name: 'gemv_unaligned_bf16' };

const WARPS_PER_BLOCK = 8;
/** Weight tiles are 8 rows (one per warp) × up to 2048 columns: 32 KiB of shared memory per stage. */
const TILE_ROWS = WARPS_PER_BLOCK;
const TILE_BYTES = TILE_ROWS * 2048 * 2;
const MAX_STAGES = 3;
// Measured best on the H200 (docs/gpu.md): three blocks of two tiles in flight per multiprocessor.
const DEFAULT_BLOCKS_PER_MULTIPROCESSOR = 3;
const DEFAULT_STAGES = 2;
const preparedKernels = new Set<bigint>();

export interface GemvOptions extends LaunchOptions {
  /**
   * Programmatic dependent launch (default on): the kernel may start while the previous kernel on the stream
   * finishes, streaming its weights early. Safe for any caller: it reads nothing but the (unchanging) weights before
   * griddepcontrol.wait, which waits for the previous kernel's completion, and writes y only after it.
   */
  readonly dependentLaunch?: boolean;
  /** Tuning: blocks per multiprocessor (1 to 4). */
  readonly blocksPerMultiprocessor?: number;
  /** Tuning: weight tiles in flight per block (1 to 3). */
  readonly stages?: number;
}

export function gemv(
  cuda: CudaContext,
  a: { y: DevicePointer; w: DevicePointer; x: DevicePointer; rows: number; outFeatures: number; inFeatures: number },
  options: GemvOptions = {},
): void {
  requireCount(a.rows, 'rows', 1, 65535);
  requireCount(a.outFeatures, 'outFeatures');
  requireCount(a.inFeatures, 'inFeatures');
  const staged = (a.w | a.x) % 16n === 0n && a.inFeatures % 8 === 0;
  const stages = staged ? (options.stages ?? DEFAULT_STAGES) : 0;
  if (staged) requireCount(stages, 'stages', 1, MAX_STAGES);
  const kernel = options.kernel ?? (staged ? GEMV_KERNEL : GEMV_UNALIGNED_KERNEL);
  const handle = cuda.kernels.kernel(kernel.family, kernel.name);
  if (staged && !preparedKernels.has(handle)) {
    cuda.driver.setMaxDynamicSharedBytes(handle, MAX_STAGES * TILE_BYTES);
    // All of L1 as shared memory, so that several blocks' tiles (a dependent launch's too) fit at once.
    cuda.driver.setPreferredSharedCarveout(handle, 100);
    preparedKernels.add(handle);
  }
  const args = new KernelArguments()
    .pointer(a.y)
    .pointer(a.w)
    .pointer(a.x)
    .int32(a.outFeatures)
    .int32(a.inFeatures)
    .int32(a.rows);
  if (staged) args.int32(stages);
  const perMultiprocessor = options.blocksPerMultiprocessor ?? DEFAULT_BLOCKS_PER_MULTIPROCESSOR;
  requireCount(perMultiprocessor, 'blocksPerMultiprocessor', 1, 4);
  // A fixed number of blocks per multiprocessor walk the tiles.
  const blocks = Math.min(Math.ceil(a.outFeatures / TILE_ROWS), perMultiprocessor * cuda.properties.multiprocessors);
  const shape = {
    grid: [blocks, a.rows, 1],
    block: [WARPS_PER_BLOCK * 32, 1, 1],
    sharedBytes: stages * TILE_BYTES,
  } as const;
  const attributes = (options.dependentLaunch ?? true) ? { programmaticStreamSerialization: true } : undefined;
  launch(cuda, kernel, shape, args, { ...options, kernel }, attributes);
}
