// Launchers for kernels/cuda/synth_init.cu: synthetic weights drawn on the device with synth's values (the fills'
// parameters and the CPU reference of each element are in src/synth/device-init.ts).
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

/** The two 32-bit keys of a tensor's stream (a hash of the seed and the tensor's name). */
export interface StreamKey {
  readonly keyLow: number;
  readonly keyHigh: number;
}

/** Element i is fp32(low + width · u(i)), u uniform in (0, 1) from the key's stream. */
export interface UniformFill extends StreamKey {
  readonly low: number;
  readonly width: number;
}

/** Block scales: fp32(halfWidth · fp32(low + width · u) / divisor). */
export interface ScaleFill extends UniformFill {
  readonly halfWidth: number;
  readonly divisor: number;
}

const family = 'synth_init';
const FILL_BF16: KernelName = { family, name: 'synth_fill_bf16' };
const FILL_E4M3: KernelName = { family, name: 'synth_fill_e4m3' };
const FILL_SCALES: KernelName = { family, name: 'synth_fill_block_scales' };
const THREADS = 256;
/** Enough blocks to fill every SM many times over; each thread walks the rest of the tensor. */
const MAX_BLOCKS = 8192;
const MAX_ELEMENTS = 2 ** 32 - 1;

function gridFor(work: number) {
  return {
    grid: [Math.max(1, Math.min(MAX_BLOCKS, Math.ceil(work / THREADS))), 1, 1],
    block: [THREADS, 1, 1],
  } as const;
}

/** out[i] = bf16 of the fill's element first + i, for i < count (out holds count bf16 values). */
export function synthFillBf16(
  cuda: CudaContext,
  a: { out: DevicePointer; first: number; count: number; fill: UniformFill },
  options: LaunchOptions = {},
): void {
  requireCount(a.count, 'count', 1, MAX_ELEMENTS);
  requireCount(a.first, 'first', 0, MAX_ELEMENTS - a.count);
  const args = new KernelArguments()
    .pointer(a.out)
    .uint32(a.first)
    .uint32(a.count)
    .uint32(a.fill.keyLow)
    .uint32(a.fill.keyHigh)
    .float64(a.fill.low)
    .float64(a.fill.width);
  launch(cuda, FILL_BF16, gridFor(a.count), args, options);
}

/** count e4m3 bytes at out (16-byte aligned) from the stream through the 65536-entry code table on the device. */
export function synthFillE4m3(
  cuda: CudaContext,
  a: { out: DevicePointer; count: number; stream: StreamKey; table: DevicePointer },
  options: LaunchOptions = {},
): void {
  requireCount(a.count, 'count', 1, MAX_ELEMENTS);
  requireCount(Number(a.out % 16n), 'out address mod 16', 0, 0);
  const args = new KernelArguments()
    .pointer(a.out)
    .uint32(a.count)
    .uint32(a.stream.keyLow)
    .uint32(a.stream.keyHigh)
    .pointer(a.table);
  launch(cuda, FILL_E4M3, gridFor(Math.ceil(a.count / 16)), args, options);
}

/** count f32 block scales at out. */
export function synthFillBlockScales(
  cuda: CudaContext,
  a: { out: DevicePointer; count: number; fill: ScaleFill },
  options: LaunchOptions = {},
): void {
  requireCount(a.count, 'count', 1, MAX_ELEMENTS);
  const args = new KernelArguments()
    .pointer(a.out)
    .uint32(a.count)
    .uint32(a.fill.keyLow)
    .uint32(a.fill.keyHigh)
    .float64(a.fill.low)
    .float64(a.fill.width)
    .float64(a.fill.halfWidth)
    .float64(a.fill.divisor);
  launch(cuda, FILL_SCALES, gridFor(a.count), args, options);
}
