// Launcher for kernels/cuda/router.cu: softmax over [rows, experts] bf16 logits, top-k, renormalised weights.
// expertIds: [rows, topK] int32; expertWeights: [rows, topK] fp32, in descending order, ties to the lower index.
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

const ROUTER_KERNEL: KernelName = { family: 'router', name: 'router_top_k' };

/** The kernel keeps 16 logits per lane of one warp. */
const ROUTER_MAX_EXPERTS = 512;
const WARPS_PER_BLOCK = 4;

export function routerTopK(
  cuda: CudaContext,
  a: {
    expertIds: DevicePointer;
    expertWeights: DevicePointer;
    logits: DevicePointer;
    rows: number;
    experts: number;
    topK: number;
  },
  options: LaunchOptions = {},
): void {
  requireCount(a.rows, 'rows');
  requireCount(a.experts, 'experts', 1, ROUTER_MAX_EXPERTS);
  requireCount(a.topK, 'topK', 1, a.experts);
  const args = new KernelArguments()
    .pointer(a.expertIds)
    .pointer(a.expertWeights)
    .pointer(a.logits)
    .int32(a.rows)
    .int32(a.experts)
    .int32(a.topK);
  const shape = { grid: [Math.ceil(a.rows / WARPS_PER_BLOCK), 1, 1], block: [WARPS_PER_BLOCK * 32, 1, 1] } as const;
  launch(cuda, ROUTER_KERNEL, shape, args, options);
}
