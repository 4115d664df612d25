// Launcher for kernels/cuda/gemv.cu: y[rows, outFeatures] = x[rows, inFeatures] · w[outFeatures, inFeatures]ᵀ, all
// bf16, fp32 accumulation. Meant for one-row decode projections; a row beyond the first re-reads the weights, so
// prefill-sized inputs go to cuBLASLt (cublaslt.ts) instead.
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

export const GEMV_KERNEL: KernelName = { family: 'gemv', name: 'gemv_bf16' };

const WARPS_PER_BLOCK = 4;

export function gemv(
  cuda: CudaContext,
  a: { y: DevicePointer; w: DevicePointer; x: DevicePointer; rows: number; outFeatures: number; inFeatures: number },
  options: LaunchOptions = {},
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
  const shape = {
    grid: [Math.ceil(a.outFeatures / WARPS_PER_BLOCK), a.rows, 1],
    block: [WARPS_PER_BLOCK * 32, 1, 1],
  } as const;
  launch(cuda, GEMV_KERNEL, shape, args, options);
}
