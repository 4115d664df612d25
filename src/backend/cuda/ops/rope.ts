// Launcher for kernels/cuda/rope.cu. x, out: [rows, heads, headDim] bf16 addressed by rowStride and headStride (in
// elements; contiguous heads: headStride = headDim, rowStride = heads·headDim); out may alias x. positions: [rows]
// int32 (device). The first rotaryDims of each head rotate, NeoX (rotate-half) or interleaved (GPT-J) pairs.
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount, roundUpToWarp } from './launch.ts';

const ROPE_KERNEL: KernelName = { family: 'rope', name: 'rope_bf16' };

export type RopeStyle = 'neox' | 'interleaved';

export interface RopeArguments {
  readonly out: DevicePointer;
  readonly x: DevicePointer;
  readonly positions: DevicePointer;
  readonly rows: number;
  readonly heads: number;
  readonly headDim: number;
  readonly rotaryDims: number;
  readonly theta: number;
  readonly style: RopeStyle;
  readonly rowStride?: number;
  readonly headStride?: number;
}

export function rope(cuda: CudaContext, a: RopeArguments, options: LaunchOptions = {}): void {
  requireCount(a.rows, 'rows');
  requireCount(a.heads, 'heads');
  requireCount(a.headDim, 'headDim', 2);
  requireCount(a.rotaryDims, 'rotaryDims', 2, a.headDim);
  if (a.rotaryDims % 2 !== 0) requireCount(a.rotaryDims, 'rotaryDims (even)', a.rotaryDims + 1);
  requireCount(a.rows * a.heads, 'rows·heads');
  const headStride = a.headStride ?? a.headDim;
  const rowStride = a.rowStride ?? a.heads * headStride;
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.x)
    .pointer(a.positions)
    .int32(a.rows)
    .int32(a.heads)
    .int32(a.headDim)
    .int32(a.rotaryDims)
    .float32(a.theta)
    .int32(a.style === 'interleaved' ? 1 : 0)
    .int64(rowStride)
    .int64(headStride);
  const threads = roundUpToWarp(Math.max(a.rotaryDims / 2, a.headDim - a.rotaryDims), 256);
  launch(cuda, ROPE_KERNEL, { grid: [a.rows * a.heads, 1, 1], block: [threads, 1, 1] }, args, options);
}
