// Launcher for kernels/cuda/gemv.cu: y[rows, outFeatures] = x[rows, inFeatures] · w[outFeatures, inFeatures]ᵀ, all
// bf16, fp32 accumulation. Meant for one-row decode projections; a row beyond the first re-reads the weights, so
// prefill-sized inputs go to cuBLASLt (cublaslt.ts) instead.
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

export const GEMV_KERNEL: KernelName = { family: 'gemv', name: 'gemv_bf16' };

const WARPS_PER_BLOCK = 8;

export interface GemvOptions extends LaunchOptions {
  /**
   * Programmatic dependent launch: the kernel may start while the previous kernel on the stream finishes, streaming
   * its weights early; it waits for that kernel (griddepcontrol.wait) before reading x.
   */
  readonly dependentLaunch?: boolean;
}

export function gemv(
  cuda: CudaContext,
  a: { y: DevicePointer; w: DevicePointer; x: DevicePointer; rows: number; outFeatures: number; inFeatures: number },
  options: GemvOptions = {},
): void {
  requireCount(a.rows, 'rows', 1, 65535);
  requireCount(a.outFeatures, 'outFeatures');
  requireCount(a.inFeatures, 'inFeatures');
  const args = new KernelArguments()
    .pointer(a.y)
    .pointer(a.w)
    .pointer(a.x)
    .int32(a.outFeatures)
    .int32(a.inFeatures)
    .int32(a.rows);
  // About one block per multiprocessor: the warps walk the features, and a dependent launch's blocks fit beside.
  const blocks = Math.min(Math.ceil(a.outFeatures / WARPS_PER_BLOCK), cuda.properties.multiprocessors);
  const shape = { grid: [blocks, a.rows, 1], block: [WARPS_PER_BLOCK * 32, 1, 1] } as const;
  const attributes = options.dependentLaunch ? { programmaticStreamSerialization: true } : undefined;
  launch(cuda, GEMV_KERNEL, shape, args, options, attributes);
}
