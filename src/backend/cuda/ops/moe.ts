// Launchers for the sparse MoE block's experts on the device (kernels/cuda/moe_route.cu, moe_fp8.cu, moe_bf16.cu): the
// grouped gate|up + SwiGLU, the down GEMM over the tile table (FP8: h quantised inside it), and the fixed-order
// combine with the shared expert. The router's launch groups the choices by expert (router.ts, routerQuantize.ts);
// moeGroupPairs, the same grouping as a launch of its own, groups ids that no router wrote (the kernel contract's
// expert cases, the bench). Nothing here reads a device value: every grid is the worst case for the call's row count,
// so the whole sequence can be captured in a CUDA graph. Weight layout: ../moeWeights.ts.
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';
import { allowShared } from './sharedLimit.ts';

export const MOE_GROUP_KERNEL: KernelName = { family: 'moe_route', name: 'moe_group_pairs' };
export const MOE_COMBINE_KERNEL: KernelName = { family: 'moe_route', name: 'moe_combine' };
export const MOE_GATE_UP_FP8_KERNEL: KernelName = { family: 'moe_fp8', name: 'moe_gate_up_fp8' };
export const MOE_DOWN_FP8_KERNEL: KernelName = { family: 'moe_fp8', name: 'moe_down_fp8' };
export const MOE_GATE_UP_FP8_WIDE_KERNEL: KernelName = { family: 'moe_fp8', name: 'moe_gate_up_fp8_wide' };
export const MOE_DOWN_FP8_WIDE_KERNEL: KernelName = { family: 'moe_fp8', name: 'moe_down_fp8_wide' };
export const MOE_GATE_UP_BF16_KERNEL: KernelName = { family: 'moe_bf16', name: 'moe_gate_up_bf16' };
export const MOE_DOWN_BF16_KERNEL: KernelName = { family: 'moe_bf16', name: 'moe_down_bf16' };

/** Pairs per tile of the grouped GEMMs (the mma's n = 8). */
export const MOE_TILE_PAIRS = 8;
/**
 * The FP8 GEMMs' tiles: `narrow` (8 pairs, one mma's n) or `wide` (up to 64 pairs of one expert, moe_fp8_wide.cuh),
 * which load and widen each weight once for 64 pairs. Both give the same bits; the launcher picks by row count.
 */
export type MoeTiling = 'narrow' | 'wide';
/** Calls of at least this many rows run on wide tiles (16 pairs an expert at 256 experts, top-8): measured on the
 * H200 (bench/gpu-moe.ts) against narrow tiles walking 4 groups, wide tiles are 40% and 52% slower at 256 rows (gate|up,
 * down), 36% faster and even at 1024. */
export const MOE_WIDE_ROWS = 512;
const WIDE_PAIRS = 64;
const WIDE_ROW_BYTES = 72 * 4;
const WIDE_THREADS = 128;
const WIDE_WARPS = 4;
const WIDE_DOWN_THREADS = 256;
/** Parts of the output rows a wide tile's down projection is split into (moe_fp8_wide.cuh WIDE_DOWN_SPLIT). */
const WIDE_DOWN_SPLIT = 2;

/** Weight groups a narrow tile's gate|up block or down warp walks: more blocks for little work, or fewer that stage
 * the tile's rows once for 4 groups and stream the weights through a ring (moe_fp8.cuh). The same bits either way. */
export type MoeGroupsWalked = 1 | 4;
/** Calls of at least this many rows walk 4 groups: measured on the H200 (bench/gpu-moe.ts), even at 8 rows for
 * gate|up and 18% faster for down there, 11% and 15% faster at 64 rows, 52% and 78% slower at one row. */
export const MOE_WALK_ROWS = 8;

function groupsWalked(rows: number, walked: MoeGroupsWalked | undefined): MoeGroupsWalked {
  return walked ?? (rows >= MOE_WALK_ROWS ? 4 : 1);
}

function tilingFor(rows: number, tiling: MoeTiling | undefined): MoeTiling {
  return tiling ?? (rows >= MOE_WIDE_ROWS ? 'wide' : 'narrow');
}

/** moe_route.cu's shared-memory tables and the combine's per-row order. */
export const MOE_MAX_EXPERTS = 256;
export const MOE_MAX_TOP_K = 16;
const GROUP_THREADS = 1024;
/** The narrow GEMMs' gate|up block: 4 warps (moe_fp8.cuh THREADS). */
export const MOE_GEMM_THREADS = 128;
const GEMM_WARPS = 4;
/** The down GEMM's block: one 16-row weight group per warp (moe_fp8.cuh DOWN_WARPS). */
export const MOE_DOWN_WARPS = 8;
const ROW_PAD = 16;
const COMBINE_THREADS = 256;
/** Each of the 4 warps sums 1 to 4 of the 128-column blocks: dimensions 512, 1024, 1536, 2048. */
const FP8_MAX_DIMENSION = 2048;

/** Tiles the worst routing of `pairs` pairs over `experts` experts can need: ⌈pairs/8⌉ + one partial per expert. */
export function moeMaxTiles(pairs: number, experts: number): number {
  return Math.ceil(pairs / MOE_TILE_PAIRS) + Math.min(experts, pairs);
}

/** Device buffers the grouping writes and the GEMMs read; moeGroupingBytes gives their sizes. */
export interface MoeGrouping {
  /** [rows · topK] int32 */
  readonly pairSlots: DevicePointer;
  /** [experts + 1] int32 */
  readonly expertOffsets: DevicePointer;
  /** [moeMaxTiles, 4] int32 */
  readonly tiles: DevicePointer;
  /** [1] int32 */
  readonly tileCount: DevicePointer;
}

export function moeGroupingBytes(rows: number, topK: number, experts: number) {
  return {
    pairSlots: rows * topK * 4,
    expertOffsets: (experts + 1) * 4,
    tiles: moeMaxTiles(rows * topK, experts) * 16,
    tileCount: 4,
    /** The router launch's arrival counter (router.ts RouterGrouping). */
    arrivals: 4,
  };
}

/** The grouping's tables hold MOE_MAX_EXPERTS experts and MOE_MAX_TOP_K choices a row. */
export function requireRouting(rows: number, topK: number, experts: number): void {
  requireCount(rows, 'rows');
  requireCount(experts, 'experts', 1, MOE_MAX_EXPERTS);
  requireCount(topK, 'topK', 1, Math.min(MOE_MAX_TOP_K, experts));
  requireCount(rows * topK, 'rows · topK');
}

function requireMultiple(value: number, multiple: number, name: string): void {
  if (value % multiple !== 0) {
    throw new DramaError('KERNEL_ARGUMENT_INVALID', `${name} must be a multiple of ${multiple}, got ${value}`, {
      kind: 'internal',
      param: name,
    });
  }
}

/** The FP8 GEMMs' 4 warps each sum 1 to 4 of a dimension's 128-column blocks. */
export function requireFp8Dimension(value: number, name: string): void {
  requireCount(value, name, GEMM_WARPS * 128, FP8_MAX_DIMENSION);
  requireMultiple(value, GEMM_WARPS * 128, name);
}

export function moeGroupPairs(
  cuda: CudaContext,
  a: MoeGrouping & { expertIds: DevicePointer; rows: number; topK: number; experts: number },
  options: LaunchOptions = {},
): void {
  requireRouting(a.rows, a.topK, a.experts);
  const args = new KernelArguments()
    .pointer(a.pairSlots)
    .pointer(a.expertOffsets)
    .pointer(a.tiles)
    .pointer(a.tileCount)
    .pointer(a.expertIds)
    .int32(a.rows)
    .int32(a.topK)
    .int32(a.experts)
    .int32(MOE_TILE_PAIRS)
    .int32(moeMaxTiles(a.rows * a.topK, a.experts));
  launch(cuda, MOE_GROUP_KERNEL, { grid: [1, 1, 1], block: [GROUP_THREADS, 1, 1] }, args, options);
}

/** FP8 experts in the moeWeights.ts layout. */
export interface MoeFp8Weights {
  readonly gateUp: DevicePointer;
  readonly gateUpScales: DevicePointer;
  readonly down: DevicePointer;
  readonly downScales: DevicePointer;
}

/** A narrow gate|up block's shared memory: its tile's quantised rows (padded), their scales, the warps' partials. */
export function narrowGateUpSharedBytes(hidden: number): number {
  const blocks = hidden / 128;
  return MOE_TILE_PAIRS * (hidden + ROW_PAD) + MOE_TILE_PAIRS * blocks * 4 + blocks * 128 * 4;
}

/** A narrow down block's shared memory: its tile's rows of h quantised in the kernel (padded) and their scales. */
export function narrowDownSharedBytes(intermediate: number): number {
  return MOE_TILE_PAIRS * (intermediate + ROW_PAD) + MOE_TILE_PAIRS * (intermediate / 128) * 4;
}

export function moeGateUpFp8(
  cuda: CudaContext,
  a: MoeGrouping & {
    h: DevicePointer;
    quantized: DevicePointer;
    scales: DevicePointer;
    weights: MoeFp8Weights;
    rows: number;
    topK: number;
    experts: number;
    hidden: number;
    intermediate: number;
    tiling?: MoeTiling;
    /** Narrow tiles: weight groups a gate|up block or a down warp walks (1 or 4); absent: by row count. */
    groupsWalked?: MoeGroupsWalked;
  },
  options: LaunchOptions = {},
): void {
  requireRouting(a.rows, a.topK, a.experts);
  requireFp8Dimension(a.hidden, 'hidden');
  requireFp8Dimension(a.intermediate, 'intermediate');
  if (tilingFor(a.rows, a.tiling) === 'wide') {
    moeGateUpFp8Wide(cuda, a, options);
    return;
  }
  const sharedBytes = narrowGateUpSharedBytes(a.hidden);
  const walked = groupsWalked(a.rows, a.groupsWalked);
  const args = gateUpArguments(a).int32(walked);
  const grid = [moeMaxTiles(a.rows * a.topK, a.experts), (2 * a.intermediate) / 16 / walked, 1] as const;
  launch(cuda, MOE_GATE_UP_FP8_KERNEL, { grid, block: [MOE_GEMM_THREADS, 1, 1], sharedBytes }, args, options);
}

export function moeDownFp8(
  cuda: CudaContext,
  a: MoeGrouping & {
    y: DevicePointer;
    h: DevicePointer;
    weights: MoeFp8Weights;
    rows: number;
    topK: number;
    experts: number;
    hidden: number;
    intermediate: number;
    tiling?: MoeTiling;
    /** Narrow tiles: weight groups a gate|up block or a down warp walks (1 or 4); absent: by row count. */
    groupsWalked?: MoeGroupsWalked;
  },
  options: LaunchOptions = {},
): void {
  requireRouting(a.rows, a.topK, a.experts);
  requireFp8Dimension(a.hidden, 'hidden');
  requireFp8Dimension(a.intermediate, 'intermediate');
  if (tilingFor(a.rows, a.tiling) === 'wide') {
    moeDownFp8Wide(cuda, a, options);
    return;
  }
  const sharedBytes = narrowDownSharedBytes(a.intermediate);
  const walked = groupsWalked(a.rows, a.groupsWalked);
  const args = downArguments(a).int32(walked);
  // One dimension, tile-major: a tile's blocks stream its expert's weights in order.
  const grid = [moeMaxTiles(a.rows * a.topK, a.experts) * (a.hidden / 16 / MOE_DOWN_WARPS / walked), 1, 1] as const;
  launch(cuda, MOE_DOWN_FP8_KERNEL, { grid, block: [MOE_DOWN_WARPS * 32, 1, 1], sharedBytes }, args, options);
}

type GateUpArguments = Parameters<typeof moeGateUpFp8>[1];
type DownArguments = Parameters<typeof moeDownFp8>[1];

/** The arguments every FP8 gate|up kernel takes first (moe_fp8.cu); each variant appends its own. */
function gateUpArguments(a: GateUpArguments): KernelArguments {
  return new KernelArguments()
    .pointer(a.h)
    .pointer(a.quantized)
    .pointer(a.scales)
    .pointer(a.weights.gateUp)
    .pointer(a.weights.gateUpScales)
    .pointer(a.pairSlots)
    .pointer(a.tiles)
    .pointer(a.tileCount)
    .int32(a.hidden)
    .int32(a.intermediate)
    .int32(a.topK);
}

/** The arguments every FP8 down kernel takes first (moe_fp8.cu); each variant appends its own. */
function downArguments(a: DownArguments): KernelArguments {
  return new KernelArguments()
    .pointer(a.y)
    .pointer(a.h)
    .pointer(a.weights.down)
    .pointer(a.weights.downScales)
    .pointer(a.pairSlots)
    .pointer(a.tiles)
    .pointer(a.tileCount)
    .int32(a.hidden)
    .int32(a.intermediate);
}

function moeGateUpFp8Wide(cuda: CudaContext, a: GateUpArguments, options: LaunchOptions): void {
  const blocks = a.hidden / 128;
  // Two buffers of one K block's rows widened to f16, then the rows' scales.
  const sharedBytes = 2 * WIDE_PAIRS * WIDE_ROW_BYTES + WIDE_PAIRS * blocks * 4;
  const args = gateUpArguments(a).pointer(a.expertOffsets);
  const grid = [moeMaxTiles(a.rows * a.topK, a.experts), (2 * a.intermediate) / 16 / WIDE_WARPS, 1] as const;
  allowShared(cuda, MOE_GATE_UP_FP8_WIDE_KERNEL, options, sharedBytes);
  launch(cuda, MOE_GATE_UP_FP8_WIDE_KERNEL, { grid, block: [WIDE_THREADS, 1, 1], sharedBytes }, args, options);
}

function moeDownFp8Wide(cuda: CudaContext, a: DownArguments, options: LaunchOptions): void {
  const blocks = a.intermediate / 128;
  // Every K block's rows widened to f16, the rows quantised to e4m3 (padded), their scales.
  const sharedBytes =
    blocks * WIDE_PAIRS * WIDE_ROW_BYTES + WIDE_PAIRS * (a.intermediate + ROW_PAD) + WIDE_PAIRS * blocks * 4;
  const args = downArguments(a).pointer(a.expertOffsets);
  // A block per narrow tile (those leading no wide tile return) and part of the output rows.
  const grid = [moeMaxTiles(a.rows * a.topK, a.experts), WIDE_DOWN_SPLIT, 1] as const;
  allowShared(cuda, MOE_DOWN_FP8_WIDE_KERNEL, options, sharedBytes);
  launch(cuda, MOE_DOWN_FP8_WIDE_KERNEL, { grid, block: [WIDE_DOWN_THREADS, 1, 1], sharedBytes }, args, options);
}

export function moeCombine(
  cuda: CudaContext,
  a: {
    out: DevicePointer;
    expertOut: DevicePointer;
    expertIds: DevicePointer;
    expertWeights: DevicePointer;
    sharedOut: DevicePointer;
    sharedGate: DevicePointer;
    rows: number;
    topK: number;
    experts: number;
    hidden: number;
  },
  options: LaunchOptions = {},
): void {
  requireRouting(a.rows, a.topK, a.experts);
  requireCount(a.hidden, 'hidden', 8);
  requireMultiple(a.hidden, 8, 'hidden');
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.expertOut)
    .pointer(a.expertIds)
    .pointer(a.expertWeights)
    .pointer(a.sharedOut)
    .pointer(a.sharedGate)
    .int32(a.rows)
    .int32(a.topK)
    .int32(a.hidden)
    .int32(a.experts);
  launch(cuda, MOE_COMBINE_KERNEL, { grid: [a.rows, 1, 1], block: [COMBINE_THREADS, 1, 1] }, args, options);
}

/** Each warp sums a quarter of K in 64-column steps; rows of the tile in shared memory stay under 48 KiB. */
function requireBf16Dimension(value: number, name: string): void {
  requireCount(value, name, GEMM_WARPS * 64, FP8_MAX_DIMENSION);
  requireMultiple(value, GEMM_WARPS * 64, name);
}

/** bf16 experts in the moeWeights.ts layout (gate|up and down, bf16 fragment order). */
export interface MoeBf16Weights {
  readonly gateUp: DevicePointer;
  readonly down: DevicePointer;
}

export function moeGateUpBf16(
  cuda: CudaContext,
  a: MoeGrouping & {
    h: DevicePointer;
    x: DevicePointer;
    weights: MoeBf16Weights;
    rows: number;
    topK: number;
    experts: number;
    hidden: number;
    intermediate: number;
  },
  options: LaunchOptions = {},
): void {
  requireRouting(a.rows, a.topK, a.experts);
  requireBf16Dimension(a.hidden, 'hidden');
  requireBf16Dimension(a.intermediate, 'intermediate');
  const sharedBytes = MOE_TILE_PAIRS * (2 * a.hidden + ROW_PAD) + GEMM_WARPS * 128 * 4;
  const args = new KernelArguments()
    .pointer(a.h)
    .pointer(a.x)
    .pointer(a.weights.gateUp)
    .pointer(a.pairSlots)
    .pointer(a.tiles)
    .pointer(a.tileCount)
    .int32(a.hidden)
    .int32(a.intermediate)
    .int32(a.topK);
  const grid = [moeMaxTiles(a.rows * a.topK, a.experts), (2 * a.intermediate) / 16, 1] as const;
  launch(cuda, MOE_GATE_UP_BF16_KERNEL, { grid, block: [MOE_GEMM_THREADS, 1, 1], sharedBytes }, args, options);
}

export function moeDownBf16(
  cuda: CudaContext,
  a: MoeGrouping & {
    y: DevicePointer;
    h: DevicePointer;
    weights: MoeBf16Weights;
    rows: number;
    topK: number;
    experts: number;
    hidden: number;
    intermediate: number;
  },
  options: LaunchOptions = {},
): void {
  requireRouting(a.rows, a.topK, a.experts);
  requireBf16Dimension(a.hidden, 'hidden');
  requireBf16Dimension(a.intermediate, 'intermediate');
  const sharedBytes = MOE_TILE_PAIRS * (2 * a.intermediate + ROW_PAD);
  const args = new KernelArguments()
    .pointer(a.y)
    .pointer(a.h)
    .pointer(a.weights.down)
    .pointer(a.pairSlots)
    .pointer(a.tiles)
    .pointer(a.tileCount)
    .int32(a.hidden)
    .int32(a.intermediate);
  // As the FP8 down GEMM: one dimension, tile-major, DOWN_WARPS weight groups per block.
  const grid = [moeMaxTiles(a.rows * a.topK, a.experts) * (a.hidden / 16 / MOE_DOWN_WARPS), 1, 1] as const;
  launch(cuda, MOE_DOWN_BF16_KERNEL, { grid, block: [MOE_DOWN_WARPS * 32, 1, 1], sharedBytes }, args, options);
}

/** The routed-expert part of the MoE block with bf16 experts, after the router's grouping: gate|up + SwiGLU, down, combine. */
export function moeExpertsBf16(
  cuda: CudaContext,
  a: MoeGrouping & {
    out: DevicePointer;
    h: DevicePointer;
    expertOut: DevicePointer;
    x: DevicePointer;
    expertIds: DevicePointer;
    expertWeights: DevicePointer;
    sharedOut: DevicePointer;
    sharedGate: DevicePointer;
    weights: MoeBf16Weights;
    rows: number;
    topK: number;
    experts: number;
    hidden: number;
    intermediate: number;
    /** false: leave the combine to the caller (it runs after the shared expert joins). */
    combine?: boolean;
  },
  options: LaunchOptions = {},
): void {
  moeGateUpBf16(cuda, a, options);
  moeDownBf16(cuda, { ...a, y: a.expertOut }, options);
  if (a.combine !== false) moeCombine(cuda, a, options);
}

/** Overrides for the contract's controls, one per step. */
export interface MoeKernels {
  readonly gateUp?: KernelName;
  readonly down?: KernelName;
  readonly combine?: KernelName;
}

/**
 * The routed-expert part of the MoE block on one stream, after the router's grouping: gate|up + SwiGLU, down (h
 * quantised inside it), combine. `h` ([rows · topK, I] bf16) and `expertOut` ([rows · topK, H] bf16) are scratch the
 * caller owns.
 */
export function moeExpertsFp8(
  cuda: CudaContext,
  a: MoeGrouping & {
    out: DevicePointer;
    h: DevicePointer;
    expertOut: DevicePointer;
    quantized: DevicePointer;
    scales: DevicePointer;
    expertIds: DevicePointer;
    expertWeights: DevicePointer;
    sharedOut: DevicePointer;
    sharedGate: DevicePointer;
    weights: MoeFp8Weights;
    rows: number;
    topK: number;
    experts: number;
    hidden: number;
    intermediate: number;
    /** false: leave the combine to the caller (it runs after the shared expert joins). */
    combine?: boolean;
    /** Absent: the launchers' choice by row count (the contract asks for wide tiles at every row count). */
    tiling?: MoeTiling;
  },
  kernels: MoeKernels = {},
  options: LaunchOptions = {},
): void {
  moeGateUpFp8(cuda, a, { ...options, kernel: kernels.gateUp });
  moeDownFp8(cuda, { ...a, y: a.expertOut }, { ...options, kernel: kernels.down });
  if (a.combine !== false) moeCombine(cuda, a, { ...options, kernel: kernels.combine });
}
