// Launcher for kernels/cuda/swiglu.cu: out[rows, cols] = silu(gate) · up, gate and up rows `inStride` elements apart
// (a fused [rows, 2·cols] gate|up projection: gate = base, up = base + 2·cols bytes, inStride = 2·cols).
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

export const SWIGLU_KERNEL: KernelName = { family: 'swiglu', name: 'swiglu_bf16' };

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
