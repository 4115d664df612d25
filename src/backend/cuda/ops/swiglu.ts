// Launchers for kernels/cuda/swiglu.cu: out[rows, cols] = silu(gate) · up, gate and up rows `inStride` elements apart
// (a fused [rows, 2·cols] gate|up projection: gate = base, up = base + 2·cols bytes, inStride = 2·cols); and the
// segmented GEMM's combine that writes that h straight from gate's and up's split-K partials (swigluSegmentsCombine).
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { invalid } from './gemm.ts';
import { combineShape, GEMM_SEGMENT_PARAMETER_COUNT, type LeftCombine, splitElements } from './gemmSegments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

export const SWIGLU_KERNEL: KernelName = { family: 'swiglu', name: 'swiglu_bf16' };
export const SWIGLU_SEGMENTS_COMBINE_KERNEL: KernelName = { family: 'swiglu', name: 'swiglu_segments_combine_bf16' };

const THREADS = 256;
const MAX_BLOCKS = 1 << 16;

export function swiglu(
  cuda: CudaContext,
  a: { out: DevicePointer; gate: DevicePointer; up: DevicePointer; rows: number; cols: number; inStride?: number },
  options: LaunchOptions = {},
): void {
  requireCount(a.rows, 'rows');
  requireCount(a.cols, 'cols');
  const inStride = a.inStride ?? a.cols;
  requireCount(inStride, 'inStride', a.cols);
  const blocks = Math.min(MAX_BLOCKS, Math.ceil((a.rows * a.cols) / THREADS));
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.gate)
    .pointer(a.up)
    .int32(a.rows)
    .int32(a.cols)
    .int64(inStride);
  launch(cuda, SWIGLU_KERNEL, { grid: [blocks, 1, 1], block: [THREADS, 1, 1] }, args, options);
}

/** Whether a left combine's segments 0 and 1 can be a SwiGLU's gate and up combined into h: both bf16, split, alike. */
export function combinesIntoSwiglu(c: LeftCombine): boolean {
  const width = c.outFeatures[0];
  const paired = width !== undefined && c.outFeatures[1] === width;
  return paired && [0, 1].every((index) => (c.chunks[index] ?? 1) > 1 && c.outputs[index] === 'bf16');
}

/**
 * The combine a segmented GEMM left (`leaveCombine`) whose segments 0 and 1 are a SwiGLU's gate and up, both split:
 * h [rows, N] = bf16(silu(gate) · up) from gate and up each summed over its chunks in ascending order and rounded to
 * bf16, the bits of gemmSegmentsCombine then swiglu; gate and up are not stored. The other split segments (the MoE's
 * router logits and shared gate) are combined into their outputs as gemmSegmentsCombine does.
 */
export function swigluSegmentsCombine(
  cuda: CudaContext,
  a: { readonly h: DevicePointer; readonly combine: LeftCombine },
  options: LaunchOptions = {},
): void {
  const { combine } = a;
  if (!combinesIntoSwiglu(combine)) {
    throw invalid(
      'combine',
      `a SwiGLU combine needs segments 0 and 1 of one width, both bf16 and split: widths ` +
        `[${combine.outFeatures.slice(0, 2).join(', ')}], chunks [${combine.chunks.slice(0, 2).join(', ')}], ` +
        `outputs [${combine.outputs.slice(0, 2).join(', ')}]`,
    );
  }
  if (a.h === 0n) throw invalid('h', 'a SwiGLU combine needs an output h');
  const elements = splitElements(combine) - combine.rows * combine.outFeatures[0]!;
  const args = combine.appendParameters(new KernelArguments(GEMM_SEGMENT_PARAMETER_COUNT + 1)).pointer(a.h);
  launch(cuda, SWIGLU_SEGMENTS_COMBINE_KERNEL, combineShape(elements), args, options);
}
