// Launcher for kernels/cuda/router.cu: softmax over [rows, experts] bf16 logits, top-k, renormalised weights.
// expertIds: [rows, topK] int32; expertWeights: [rows, topK] fp32, in descending order, ties to the lower index.
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

const ROUTER_KERNEL: KernelName = { family: 'router', name: 'router_top_k' };

/** One warp routes a row (router.cuh): 16 logits a lane, and lane k keeps the k-th choice. */
export const ROUTER_MAX_EXPERTS = 512;
export const ROUTER_MAX_TOP_K = 32;
const WARPS_PER_BLOCK = 4;

/** What the router's kernels route: `topK` of `experts` for each of `rows` rows. */
export interface Routing {
  readonly expertIds: DevicePointer;
  readonly expertWeights: DevicePointer;
  readonly logits: DevicePointer;
  readonly rows: number;
  readonly experts: number;
  readonly topK: number;
}

/** Refuses sizes the router's warp cannot hold. */
export function requireRouting(a: Routing): void {
  requireCount(a.rows, 'rows');
  requireCount(a.experts, 'experts', 1, ROUTER_MAX_EXPERTS);
  requireCount(a.topK, 'topK', 1, Math.min(a.experts, ROUTER_MAX_TOP_K));
}

export function routerTopK(cuda: CudaContext, a: Routing, options: LaunchOptions = {}): void {
  requireRouting(a);
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
