// Launchers for the FP8 experts of a one-row call (kernels/cuda/moe_fp8_routed.cuh). moe_gate_up_fp8_routed: the
// router, x's e4m3 quantisation, the grouping by expert and the gate|up + SwiGLU in one launch, with the bits of
// routerTopKQuantize followed by moeGateUpFp8; it writes h, the ids, the weights and the grouping's tables (x's quantised
// copy stays in the kernel's shared memory), one block a choice and a 16-row weight group. moe_down_fp8_routed: the
// down GEMM taking each choice's expert from the ids (no table read before h's row is requested), with the bits of
// moeDownFp8.
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch } from './launch.ts';
import {
  MOE_DOWN_WARPS,
  MOE_GEMM_THREADS,
  type MoeFp8Weights,
  type MoeGrouping,
  moeMaxTiles,
  narrowDownSharedBytes,
  narrowGateUpSharedBytes,
  requireFp8Dimension,
  requireRouting,
} from './moe.ts';

export const MOE_GATE_UP_FP8_ROUTED_KERNEL: KernelName = { family: 'moe_fp8', name: 'moe_gate_up_fp8_routed' };
export const MOE_DOWN_FP8_ROUTED_KERNEL: KernelName = { family: 'moe_fp8', name: 'moe_down_fp8_routed' };

/** The routed launch takes calls of this many rows; more go through the router's launch and the tile table. */
export const MOE_ROUTED_ROWS = 1;

interface RoutedGeometry {
  readonly experts: number;
  readonly topK: number;
  readonly hidden: number;
  readonly intermediate: number;
}

/** The grouping's tables hold 256 experts; the GEMMs' warps sum 1 to 4 blocks of 128 columns each. */
function requireRoutedGeometry(a: RoutedGeometry): void {
  requireRouting(MOE_ROUTED_ROWS, a.topK, a.experts);
  requireFp8Dimension(a.hidden, 'hidden');
  requireFp8Dimension(a.intermediate, 'intermediate');
}

export function moeGateUpFp8Routed(
  cuda: CudaContext,
  a: MoeGrouping &
    RoutedGeometry & {
      h: DevicePointer;
      expertIds: DevicePointer;
      expertWeights: DevicePointer;
      logits: DevicePointer;
      x: DevicePointer;
      weights: MoeFp8Weights;
    },
  options: LaunchOptions = {},
): void {
  requireRoutedGeometry(a);
  const sharedBytes = narrowGateUpSharedBytes(a.hidden);
  const args = new KernelArguments()
    .pointer(a.h)
    .pointer(a.expertIds)
    .pointer(a.expertWeights)
    .pointer(a.pairSlots)
    .pointer(a.expertOffsets)
    .pointer(a.tiles)
    .pointer(a.tileCount)
    .pointer(a.logits)
    .pointer(a.x)
    .pointer(a.weights.gateUp)
    .pointer(a.weights.gateUpScales)
    .int32(a.experts)
    .int32(a.topK)
    .int32(a.hidden)
    .int32(a.intermediate)
    .int32(moeMaxTiles(MOE_ROUTED_ROWS * a.topK, a.experts));
  const grid = [a.topK, (2 * a.intermediate) / 16, 1] as const;
  launch(cuda, MOE_GATE_UP_FP8_ROUTED_KERNEL, { grid, block: [MOE_GEMM_THREADS, 1, 1], sharedBytes }, args, options);
}

export function moeDownFp8Routed(
  cuda: CudaContext,
  a: RoutedGeometry & { y: DevicePointer; h: DevicePointer; expertIds: DevicePointer; weights: MoeFp8Weights },
  options: LaunchOptions = {},
): void {
  requireRoutedGeometry(a);
  const sharedBytes = narrowDownSharedBytes(a.intermediate);
  const args = new KernelArguments()
    .pointer(a.y)
    .pointer(a.h)
    .pointer(a.weights.down)
    .pointer(a.weights.downScales)
    .pointer(a.expertIds)
    .int32(a.experts)
    .int32(a.topK)
    .int32(a.hidden)
    .int32(a.intermediate);
  // One dimension, choice-major: a choice's blocks stream its expert's weights in order.
  const grid = [a.topK * (a.hidden / 16 / MOE_DOWN_WARPS), 1, 1] as const;
  launch(cuda, MOE_DOWN_FP8_ROUTED_KERNEL, { grid, block: [MOE_DOWN_WARPS * 32, 1, 1], sharedBytes }, args, options);
}
