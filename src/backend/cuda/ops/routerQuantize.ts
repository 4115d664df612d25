// Launcher for kernels/cuda/router_quantize.cu: in one launch, the router over [rows, experts] bf16 logits (as
// routerTopK), x: [rows, cols] bf16 quantised to e4m3 per row per 128 columns (as quantizeE4m3, into q: [rows, cols]
// uint8 and scales: [rows, ceil(cols/128)] fp32) and, with a grouping, the choices grouped by expert by the grid's last
// block to finish (the tables moe_group_pairs writes). One block per row: a routing warp and a warp per column block,
// at most 16 (they take the blocks in turn past that).
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';
import { FP8_ACTIVATION_BLOCK } from './quantizeFp8.ts';
import { groupingPointers, groupingSizes, type Routing, requireRouting } from './router.ts';

const ROUTER_QUANTIZE_KERNEL: KernelName = { family: 'router_quantize', name: 'router_top_k_quantize' };

/** router_quantize.cu's block holds at most 17 warps. */
const MAX_QUANTIZE_WARPS = 16;

export function routerTopKQuantize(
  cuda: CudaContext,
  a: Routing & { q: DevicePointer; scales: DevicePointer; x: DevicePointer; cols: number },
  options: LaunchOptions = {},
): void {
  requireRouting(a);
  requireCount(a.cols, 'cols', 1, 1 << 24);
  const quantizeWarps = Math.min(Math.ceil(a.cols / FP8_ACTIVATION_BLOCK), MAX_QUANTIZE_WARPS);
  // 17 arguments: one past the default capacity.
  const routed = new KernelArguments(17).pointer(a.expertIds).pointer(a.expertWeights).pointer(a.q).pointer(a.scales);
  const args = groupingPointers(routed, a.grouping)
    .pointer(a.logits)
    .pointer(a.x)
    .int32(a.rows)
    .int32(a.experts)
    .int32(a.topK)
    .int32(a.cols);
  const shape = { grid: [a.rows, 1, 1], block: [(1 + quantizeWarps) * 32, 1, 1] } as const;
  launch(cuda, ROUTER_QUANTIZE_KERNEL, shape, groupingSizes(args, a), options);
}
