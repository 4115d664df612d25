// Launchers for kernels/cuda/sampler.cu (the cpu reference is src/backend/cpu/ops/sampling.ts) and the lane table it
// reads: int32 [B, LANE_ENTRY] per decode-step batch row b, with the fields of src/backend/types.ts (LANE_*):
//   slot, position, frame (frames drawn so far), seed low word, seed high word, temperature (float32 bits),
//   top-p (float32 bits), top-k, greedy (0/1)
// sampleMain writes the frame record's first two fields, records[b · recordStride + 0, 1] = (candidates[chosen],
// chosen or −1 for a non-semantic pick), and keeps each lane's RAS window (int32 [slots, 16]); sampleCode writes
// out[b · outStride + outOffset] = the index chosen for code[column] of a codebook. Logits are fp32 or bf16.
import { DramaError } from '../../../errors.ts';
import { float32Bits } from '../../../numeric/dtypes.ts';
import type { LaneSampling } from '../../cpu/ops/sampling.ts';
import {
  LANE_ENTRY,
  LANE_FRAME,
  LANE_GREEDY,
  LANE_POSITION,
  LANE_SEED_HIGH,
  LANE_SEED_LOW,
  LANE_SLOT,
  LANE_TEMPERATURE,
  LANE_TOP_K,
  LANE_TOP_P,
} from '../../types.ts';
import type { CudaContext } from '../context.ts';
import type { CudaDriver, DevicePointer, Handle } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

/** Entries per lane in the lane table (the kernel's LANE_TABLE_STRIDE). */
export const LANE_TABLE_STRIDE = LANE_ENTRY;

/** The entry points by logits dtype. */
const SAMPLE_MAIN: Record<SamplerLogits, KernelName> = {
  f32: { family: 'sampler', name: 'sample_main' },
  bf16: { family: 'sampler', name: 'sample_main_bf16' },
};
const SAMPLE_CODE: Record<SamplerLogits, KernelName> = {
  f32: { family: 'sampler', name: 'sample_code' },
  bf16: { family: 'sampler', name: 'sample_code_bf16' },
};

export type SamplerLogits = 'f32' | 'bf16';
/** Threads of a lane's block: the kernel's SAMPLER_THREADS (its `__launch_bounds__`). */
export const SAMPLER_THREADS = 512;
/** The kernel keeps a row's probabilities in shared memory. */
export const SAMPLER_MAX_CANDIDATES = 4352;
/** Dynamic shared memory for the full sort's storage (top-k 0 or above 64): the kernel's SAMPLER_SORT_BYTES. */
export const SAMPLER_SORT_BYTES = 36864;

function raiseSharedLimit(driver: CudaDriver, kernel: Handle): void {
  driver.setMaxDynamicSharedBytes(kernel, SAMPLER_SORT_BYTES);
}

/** Launches a sampler kernel with its dynamic shared memory, raising the kernel's limit once per module. */
function launchSampler(
  cuda: CudaContext,
  name: KernelName,
  lanes: number,
  args: KernelArguments,
  options: LaunchOptions,
) {
  const chosen = options.kernel ?? name;
  cuda.kernels.prepareOnce(cuda.kernels.kernel(chosen.family, chosen.name), raiseSharedLimit);
  launch(
    cuda,
    name,
    { grid: [lanes, 1, 1], block: [SAMPLER_THREADS, 1, 1], sharedBytes: SAMPLER_SORT_BYTES },
    args,
    options,
  );
}

/** Writes batch row b of a lane table. */
export function writeLaneEntry(
  table: Int32Array,
  b: number,
  entry: { readonly slot: number; readonly position: number; readonly frame: number; readonly sampling: LaneSampling },
): void {
  const base = b * LANE_TABLE_STRIDE;
  const { sampling } = entry;
  table[base + LANE_SLOT] = entry.slot;
  table[base + LANE_POSITION] = entry.position;
  table[base + LANE_FRAME] = entry.frame;
  table[base + LANE_SEED_LOW] = sampling.seedLow | 0;
  table[base + LANE_SEED_HIGH] = sampling.seedHigh | 0;
  table[base + LANE_TEMPERATURE] = float32Bits(sampling.settings.temperature);
  table[base + LANE_TOP_P] = float32Bits(sampling.settings.topP);
  table[base + LANE_TOP_K] = sampling.settings.topK;
  table[base + LANE_GREEDY] = sampling.greedy ? 1 : 0;
}

interface SampleCommon {
  /** [lanes, count] with rows `logitsStride` elements apart, fp32 unless `logitsDtype` says bf16. */
  readonly logits: DevicePointer;
  readonly logitsDtype?: SamplerLogits;
  readonly logitsStride: number;
  readonly count: number;
  readonly laneTable: DevicePointer;
  readonly lanes: number;
}

function checkCommon(a: SampleCommon): SamplerLogits {
  requireCount(a.lanes, 'lanes', 1, 1 << 16);
  requireCount(a.count, 'count', 1, SAMPLER_MAX_CANDIDATES);
  requireCount(a.logitsStride, 'logitsStride', a.count);
  const dtype = a.logitsDtype ?? 'f32';
  if (dtype !== 'f32' && dtype !== 'bf16') {
    throw new DramaError('KERNEL_ARGUMENT_INVALID', `sampler logits must be f32 or bf16, got ${String(dtype)}`, {
      kind: 'internal',
      param: 'logitsDtype',
    });
  }
  return dtype;
}

export function sampleMain(
  cuda: CudaContext,
  a: SampleCommon & {
    /** int32 frame records; lane b's (token, main index) go to elements b · recordStride + 0 and + 1. */
    readonly records: DevicePointer;
    readonly recordStride: number;
    readonly semanticCount: number;
    /** int32 [count]: the token id of each candidate index. */
    readonly candidates: DevicePointer;
    readonly rasWindow: DevicePointer;
  },
  options: LaunchOptions = {},
): void {
  const dtype = checkCommon(a);
  requireCount(a.recordStride, 'recordStride', 2);
  requireCount(a.semanticCount, 'semanticCount', 0, a.count);
  const args = new KernelArguments()
    .pointer(a.records)
    .int32(a.recordStride)
    .pointer(a.logits)
    .int64(a.logitsStride)
    .int32(a.count)
    .int32(a.semanticCount)
    .pointer(a.candidates)
    .pointer(a.laneTable)
    .pointer(a.rasWindow);
  launchSampler(cuda, SAMPLE_MAIN[dtype], a.lanes, args, options);
}

export function sampleCode(
  cuda: CudaContext,
  a: SampleCommon & {
    readonly out: DevicePointer;
    readonly outStride: number;
    readonly outOffset: number;
    readonly column: number;
  },
  options: LaunchOptions = {},
): void {
  const dtype = checkCommon(a);
  requireCount(a.outStride, 'outStride', 1);
  requireCount(a.outOffset, 'outOffset', 0, a.outStride - 1);
  requireCount(a.column, 'column', 1, 1 << 20);
  const args = new KernelArguments()
    .pointer(a.out)
    .int32(a.outStride)
    .int32(a.outOffset)
    .pointer(a.logits)
    .int64(a.logitsStride)
    .int32(a.count)
    .int32(a.column)
    .pointer(a.laneTable);
  launchSampler(cuda, SAMPLE_CODE[dtype], a.lanes, args, options);
}
