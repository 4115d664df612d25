// Launcher for kernels/cuda/moe_pack.cu: one expert's gate|up or down rows re-laid on the device into the grouped
// expert GEMMs' fragment layout (../moeWeights.ts), so that experts already on the device are packed without a host
// round trip. `packedWordSource` is the kernel's byte map written out on the host (the host test holds it to the
// moeWeights.ts packers).
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

export const MOE_PACK_KERNEL: KernelName = { family: 'moe_pack', name: 'moe_pack_rows' };

/** Bytes of one 16-row block of the packed layout (16 rows × 128 bytes). */
export const PACK_BLOCK_BYTES = 2048;
const ROW_BLOCK_BYTES = 128;
const THREADS = 256;
const MAX_BLOCKS = 1 << 16;

export interface PackRows {
  readonly target: DevicePointer;
  /** gate rows (interleaved) or down rows: [rows, rowBytes] */
  readonly first: DevicePointer;
  /** up rows (interleaved only): [rows, rowBytes] */
  readonly second?: DevicePointer;
  readonly rowBytes: number;
  /** 16-row groups of the target: 2I/16 for gate|up, H/16 for down. */
  readonly groups: number;
  readonly interleaved: boolean;
}

function requireAligned(pointer: DevicePointer, bytes: number, name: string): void {
  if (pointer % BigInt(bytes) !== 0n) {
    throw new DramaError('KERNEL_ARGUMENT_INVALID', `${name} must be ${bytes}-byte aligned`, {
      kind: 'internal',
      param: name,
    });
  }
}

/** Bytes of the target one call writes. */
export function packedBytes(rowBytes: number, groups: number): number {
  return groups * (rowBytes / ROW_BLOCK_BYTES) * PACK_BLOCK_BYTES;
}

export function moePackRows(cuda: CudaContext, a: PackRows, options: LaunchOptions = {}): void {
  requireCount(a.rowBytes, 'rowBytes', ROW_BLOCK_BYTES, 1 << 20);
  if (a.rowBytes % ROW_BLOCK_BYTES !== 0) {
    throw new DramaError('KERNEL_ARGUMENT_INVALID', `rowBytes must be a multiple of 128, got ${a.rowBytes}`, {
      kind: 'internal',
      param: 'rowBytes',
    });
  }
  requireCount(a.groups, 'groups', 1, 1 << 20);
  const second = a.second ?? a.first;
  // Words of 4 bytes are read from the rows, chunks of 16 written.
  requireAligned(a.first, 4, 'first');
  requireAligned(second, 4, 'second');
  requireAligned(a.target, 16, 'target');
  const chunks = packedBytes(a.rowBytes, a.groups) / 16;
  const args = new KernelArguments()
    .pointer(a.target)
    .pointer(a.first)
    .pointer(second)
    .int32(a.rowBytes)
    .int32(a.groups)
    .int32(a.interleaved ? 1 : 0);
  const blocks = Math.min(MAX_BLOCKS, Math.ceil(chunks / THREADS));
  launch(cuda, MOE_PACK_KERNEL, { grid: [blocks, 1, 1], block: [THREADS, 1, 1] }, args, options);
}

/** Where packed byte `targetByte` comes from, as the kernel reads it: source (0 first, 1 second), row and byte. */
export function packedWordSource(
  targetByte: number,
  rowBytes: number,
  interleaved: boolean,
): { source: 0 | 1; row: number; byte: number } {
  const blocks = rowBytes / ROW_BLOCK_BYTES;
  const index = Math.floor(targetByte / 16);
  const blockIndex = Math.floor(index / (PACK_BLOCK_BYTES / 16));
  const within = index - blockIndex * (PACK_BLOCK_BYTES / 16);
  const chunk = within >> 5;
  const lane = within & 31;
  const group = Math.floor(blockIndex / blocks);
  const block = blockIndex - group * blocks;
  const w = (targetByte % 16) >> 2;
  const m = (lane >> 2) + 8 * (w & 1);
  const byte = block * ROW_BLOCK_BYTES + 32 * (lane & 3) + 8 * chunk + 4 * (w >> 1) + (targetByte % 4);
  if (!interleaved) return { source: 0, row: 16 * group + m, byte };
  if (m < 8) return { source: 0, row: 8 * group + m, byte };
  return { source: 1, row: 8 * group + m - 8, byte };
}
