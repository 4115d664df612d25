// Launchers for kernels/cuda/moe_pack.cu: a block's experts' gate|up or down rows re-laid on the device into the
// grouped expert GEMMs' fragment layout (../moeWeights.ts) in one launch, and their block scales gathered end to end
// in another, so that experts already on the device are packed without a host round trip. `packedWordSource` is the
// kernel's byte map written out on the host (the host test holds it to the moeWeights.ts packers).
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

export const MOE_PACK_KERNEL: KernelName = { family: 'moe_pack', name: 'moe_pack_rows' };
export const MOE_GATHER_WORDS_KERNEL: KernelName = { family: 'moe_pack', name: 'moe_gather_words' };

/** Bytes of one 16-row block of the packed layout (16 rows × 128 bytes). */
export const PACK_BLOCK_BYTES = 2048;
const ROW_BLOCK_BYTES = 128;
const THREADS = 256;
const MAX_BLOCKS = 1 << 16;
/** The most experts (or scale runs) one launch takes: one grid's y extent. */
const MAX_SOURCES = 65535;

export interface PackRows {
  /** Expert e's packed place is target + e · targetStride. */
  readonly target: DevicePointer;
  readonly targetStride: number;
  /** [experts, 2] int64 byte offsets from `base` of each expert's gate (or down) rows, then its up rows. */
  readonly base: DevicePointer;
  readonly sources: DevicePointer;
  readonly experts: number;
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

/**
 * The [sources, 2] int64 table the pack kernel reads for experts whose gate (or down) rows are at `first[e]` and up
 * rows at `second[e]` (absolute pointers, so base 0), each row start checked to be 4-byte aligned.
 */
export function sourceTable(first: readonly DevicePointer[], second: readonly DevicePointer[] = first): BigInt64Array {
  const table = new BigInt64Array(2 * first.length);
  first.forEach((pointer, e) => {
    requireAligned(pointer, 4, 'first');
    requireAligned(second[e]!, 4, 'second');
    table[2 * e] = pointer;
    table[2 * e + 1] = second[e]!;
  });
  return table;
}

/** One launch re-lays every expert of the table into its place. */
export function moePackRows(cuda: CudaContext, a: PackRows, options: LaunchOptions = {}): void {
  requireCount(a.rowBytes, 'rowBytes', ROW_BLOCK_BYTES, 1 << 20);
  if (a.rowBytes % ROW_BLOCK_BYTES !== 0) {
    throw new DramaError('KERNEL_ARGUMENT_INVALID', `rowBytes must be a multiple of 128, got ${a.rowBytes}`, {
      kind: 'internal',
      param: 'rowBytes',
    });
  }
  requireCount(a.groups, 'groups', 1, 1 << 20);
  requireCount(a.experts, 'experts', 1, MAX_SOURCES);
  const bytes = packedBytes(a.rowBytes, a.groups);
  // Words of 4 bytes are read from the rows (sourceTable checks them), chunks of 16 written.
  requireAligned(a.base, 4, 'base');
  requireAligned(a.sources, 8, 'sources');
  requireAligned(a.target, 16, 'target');
  if (a.targetStride < bytes || a.targetStride % 16 !== 0) {
    throw new DramaError(
      'KERNEL_ARGUMENT_INVALID',
      `targetStride must be a multiple of 16 of at least ${bytes} bytes, got ${a.targetStride}`,
      { kind: 'internal', param: 'targetStride' },
    );
  }
  const args = new KernelArguments()
    .pointer(a.target)
    .int64(BigInt(a.targetStride))
    .pointer(a.base)
    .pointer(a.sources)
    .int32(a.rowBytes)
    .int32(a.groups)
    .int32(a.interleaved ? 1 : 0);
  const blocks = Math.min(MAX_BLOCKS, Math.ceil(bytes / 16 / THREADS));
  launch(cuda, MOE_PACK_KERNEL, { grid: [blocks, a.experts, 1], block: [THREADS, 1, 1] }, args, options);
}

export interface GatherWords {
  /** Run i lands at target + i · words · 4. */
  readonly target: DevicePointer;
  /** [runs] int64 byte offsets from `base` of each run's first word. */
  readonly base: DevicePointer;
  readonly offsets: DevicePointer;
  readonly runs: number;
  readonly words: number;
}

/** One launch lays `runs` runs of `words` 4-byte words end to end (the experts' block scales). */
export function moeGatherWords(cuda: CudaContext, a: GatherWords, options: LaunchOptions = {}): void {
  requireCount(a.runs, 'runs', 1, MAX_SOURCES);
  requireCount(a.words, 'words', 1, 1 << 24);
  requireAligned(a.base, 4, 'base');
  requireAligned(a.offsets, 8, 'offsets');
  requireAligned(a.target, 4, 'target');
  const args = new KernelArguments().pointer(a.target).pointer(a.base).pointer(a.offsets).int32(a.words);
  const blocks = Math.min(MAX_BLOCKS, Math.ceil(a.words / THREADS));
  launch(cuda, MOE_GATHER_WORDS_KERNEL, { grid: [blocks, a.runs, 1], block: [THREADS, 1, 1] }, args, options);
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
