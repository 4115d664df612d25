// Launcher for kernels/cuda/quantize_fp8.cu: dynamic e4m3 quantisation of x: [rows, cols] bf16 per row per 128
// columns into q: [rows, cols] uint8 e4m3 bits and scales: [rows, ceil(cols/128)] fp32 (what the FP8 experts read).
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

const QUANTIZE_KERNEL: KernelName = { family: 'quantize_fp8', name: 'quantize_e4m3_rows' };

/** Columns per scale: the release's 1×128 activation blocks. */
export const FP8_ACTIVATION_BLOCK = 128;
const WARPS_PER_BLOCK = 4;
/** The grid's y limit; the kernel walks further rows in steps of it. */
const GRID_ROWS = 65535;

export function quantizeE4m3(
  cuda: CudaContext,
  a: { q: DevicePointer; scales: DevicePointer; x: DevicePointer; rows: number; cols: number },
  options: LaunchOptions = {},
): void {
  requireCount(a.rows, 'rows', 1, 1 << 24);
  requireCount(a.cols, 'cols', 1, 1 << 24);
  const blocks = Math.ceil(a.cols / FP8_ACTIVATION_BLOCK);
  const args = new KernelArguments().pointer(a.q).pointer(a.scales).pointer(a.x).int32(a.rows).int32(a.cols);
  const shape = {
    grid: [Math.ceil(blocks / WARPS_PER_BLOCK), Math.min(a.rows, GRID_ROWS), 1],
    block: [WARPS_PER_BLOCK * 32, 1, 1],
  } as const;
  launch(cuda, QUANTIZE_KERNEL, shape, args, options);
}
