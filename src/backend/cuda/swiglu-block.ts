// A SwiGLU MLP on the device, as src/backend/cpu/moe-block.ts runSwiGlu computes it: gate(x) and up(x) by the
// backend's fused linear (one launch, each rounded to bf16), silu(gate) · up in fp32 rounded once to bf16 (written
// over the gate buffer as the cpu does), then down(·) into `out`. x: [rows, hidden] bf16, out [rows, outputs].
// Where the GEMM splits K (decode), its combine computes silu(gate) · up itself (kernels/cuda/swiglu.cuh), one
// dependent launch fewer with the same bits; else the SwiGLU kernel (kernels/cuda/swiglu.cu) runs after it.
// Other projections of the same x (the MoE block's router and shared-expert gate) may ride in the gate|up launch.
import type { SwiGluWeights } from '../types.ts';
import type { BlockContext } from './block-context.ts';
import type { LinearSegment } from './fused-linear.ts';
import { swiGluWidth } from './moe-geometry.ts';
import { combinesIntoSwiglu, swiglu, swigluSegmentsCombine } from './ops/swiglu.ts';
import type { CudaBuffer } from './tensors.ts';

export function runSwiGlu(
  ctx: BlockContext,
  weights: SwiGluWeights<CudaBuffer>,
  x: CudaBuffer,
  out: CudaBuffer,
  rows: number,
  alongside: readonly LinearSegment[] = [],
): void {
  ctx.linear(swiGluHidden(ctx, weights, x, rows, alongside), weights.down, out, rows);
}

/** The MLP up to its down projection: h = silu(gate(x)) · up(x), [rows, width] bf16 scratch (the gate buffer). */
export function swiGluHidden(
  ctx: BlockContext,
  weights: SwiGluWeights<CudaBuffer>,
  x: CudaBuffer,
  rows: number,
  alongside: readonly LinearSegment[] = [],
): CudaBuffer {
  const width = swiGluWidth(weights, 'SwiGLU MLP');
  const gate = ctx.scratch.buffer('swiglu.gate', 'bf16', rows * width);
  const up = ctx.scratch.buffer('swiglu.up', 'bf16', rows * width);
  const segments = [{ weight: weights.gate, out: gate }, { weight: weights.up, out: up }, ...alongside];
  // Where gate and up split K, their combine writes h = bf16(silu(gate) · up) into the gate buffer itself (the bits
  // of the combine then swiglu_bf16; gate and up are not stored).
  const combined = ctx.linearsCombinedBy(x, segments, rows, (left) => {
    if (!combinesIntoSwiglu(left)) return false;
    swigluSegmentsCombine(ctx.cuda, { h: gate.pointer, combine: left });
    return true;
  });
  // Elementwise: each element reads its gate and up before writing the same index, so in place is exact.
  if (!combined) swiglu(ctx.cuda, { out: gate.pointer, gate: gate.pointer, up: up.pointer, rows, cols: width });
  return gate;
}
