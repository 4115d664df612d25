// Launcher for kernels/cuda/router.cu: softmax over [rows, experts] bf16 logits, top-k, renormalised weights, and with
// a grouping the choices grouped by expert in the same launch (the tables moe_group_pairs writes, by the grid's last
// block to finish). expertIds: [rows, topK] int32; expertWeights: [rows, topK] fp32, in descending order, ties to the
// lower index.
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';
import { MOE_MAX_EXPERTS, MOE_MAX_TOP_K, MOE_TILE_PAIRS, type MoeGrouping, moeMaxTiles } from './moe.ts';

const ROUTER_KERNEL: KernelName = { family: 'router', name: 'router_top_k' };

/** One warp routes a row (router.cuh): 16 logits a lane, and lane k keeps the k-th choice. */
export const ROUTER_MAX_EXPERTS = 512;
export const ROUTER_MAX_TOP_K = 32;
/** router.cu's ROUTER_THREADS: its __launch_bounds__ and the grouping's shared tables are sized for 4 warps. */
const WARPS_PER_BLOCK = 4;

/**
 * The grouping tables (moeGroupingBytes) and the launch's arrival counter: one int32, zeroed once when allocated and
 * left at zero by every launch, so it may sit in a captured graph replayed any number of times. It must not be shared
 * by two launches in flight at once.
 */
export interface RouterGrouping extends MoeGrouping {
  readonly arrivals: DevicePointer;
}

/** What the router's kernels route: `topK` of `experts` for each of `rows` rows, grouped when `grouping` is given. */
export interface Routing {
  readonly expertIds: DevicePointer;
  readonly expertWeights: DevicePointer;
  readonly logits: DevicePointer;
  readonly rows: number;
  readonly experts: number;
  readonly topK: number;
  readonly grouping?: RouterGrouping;
}

/** Refuses sizes the router's warp cannot hold, and with a grouping those its tables cannot. */
export function requireRouting(a: Routing): void {
  requireCount(a.rows, 'rows');
  requireCount(a.experts, 'experts', 1, a.grouping ? MOE_MAX_EXPERTS : ROUTER_MAX_EXPERTS);
  requireCount(a.topK, 'topK', 1, Math.min(a.experts, a.grouping ? MOE_MAX_TOP_K : ROUTER_MAX_TOP_K));
  requireCount(a.rows * a.topK, 'rows · topK');
}

/** The grouping's pointers (nulls without one: the kernel then groups nothing), in the kernels' order. */
export function groupingPointers(args: KernelArguments, grouping: RouterGrouping | undefined): KernelArguments {
  return args
    .pointer(grouping?.pairSlots ?? 0n)
    .pointer(grouping?.expertOffsets ?? 0n)
    .pointer(grouping?.tiles ?? 0n)
    .pointer(grouping?.tileCount ?? 0n)
    .pointer(grouping?.arrivals ?? 0n);
}

/** The grouping's tile sizes: pairs per tile and the worst-case tile count moeGroupingBytes sizes the table for. */
export function groupingSizes(args: KernelArguments, a: Routing): KernelArguments {
  return args.int32(MOE_TILE_PAIRS).int32(moeMaxTiles(a.rows * a.topK, a.experts));
}

export function routerTopK(cuda: CudaContext, a: Routing, options: LaunchOptions = {}): void {
  requireRouting(a);
  const args = groupingPointers(new KernelArguments().pointer(a.expertIds).pointer(a.expertWeights), a.grouping)
    .pointer(a.logits)
    .int32(a.rows)
    .int32(a.experts)
    .int32(a.topK);
  const shape = { grid: [Math.ceil(a.rows / WARPS_PER_BLOCK), 1, 1], block: [WARPS_PER_BLOCK * 32, 1, 1] } as const;
  launch(cuda, ROUTER_KERNEL, shape, groupingSizes(args, a), options);
}
