// Launchers for kernels/cuda/sampler.cu (the cpu reference is src/backend/cpu/ops/sampling.ts) and the lane table it
// reads: int32 [B, LANE_TABLE_STRIDE] per decode-step batch row b.
//   slot, position, frame (frames drawn so far), seed low word, seed high word, temperature (float32 bits),
//   top-p (float32 bits), top-k, greedy (0/1); the remaining entries are reserved (zero)
// sampleMain writes out[b · outStride + outOffset] = the candidate index of `main` and keeps each lane's RAS window
// (int32 [slots, 16]); sampleCode does the same for code[column] of a codebook.
import type { LaneSampling } from '../../cpu/ops/sampling.ts';
import type { CudaContext } from '../context.ts';
import type { CudaDriver, DevicePointer, Handle } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

export const LANE_TABLE_STRIDE = 16;
export const LaneField = {
  slot: 0,
  position: 1,
  frame: 2,
  seedLow: 3,
  seedHigh: 4,
  temperature: 5,
  topP: 6,
  topK: 7,
  greedy: 8,
} as const;

const SAMPLE_MAIN: KernelName = { family: 'sampler', name: 'sample_main' };
const SAMPLE_CODE: KernelName = { family: 'sampler', name: 'sample_code' };
const THREADS = 256;
/** The kernel keeps a row's probabilities in shared memory. */
export const SAMPLER_MAX_CANDIDATES = 4352;
/** Dynamic shared memory for the full-sort path (top-k 0 or above 64): indices padded to 8192. */
const SORT_BYTES = 8192 * 2;

function raiseSharedLimit(driver: CudaDriver, kernel: Handle): void {
  driver.setMaxDynamicSharedBytes(kernel, SORT_BYTES);
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
  launch(cuda, name, { grid: [lanes, 1, 1], block: [THREADS, 1, 1], sharedBytes: SORT_BYTES }, args, options);
}

const floatBits = new DataView(new ArrayBuffer(4));
function float32Bits(value: number): number {
  floatBits.setFloat32(0, value);
  return floatBits.getInt32(0);
}

/** Writes batch row b of a lane table. */
export function writeLaneEntry(
  table: Int32Array,
  b: number,
  entry: { readonly slot: number; readonly position: number; readonly frame: number; readonly sampling: LaneSampling },
): void {
  const base = b * LANE_TABLE_STRIDE;
  table.fill(0, base, base + LANE_TABLE_STRIDE);
  const { sampling } = entry;
  table[base + LaneField.slot] = entry.slot;
  table[base + LaneField.position] = entry.position;
  table[base + LaneField.frame] = entry.frame;
  table[base + LaneField.seedLow] = sampling.seedLow | 0;
  table[base + LaneField.seedHigh] = sampling.seedHigh | 0;
  table[base + LaneField.temperature] = float32Bits(sampling.settings.temperature);
  table[base + LaneField.topP] = float32Bits(sampling.settings.topP);
  table[base + LaneField.topK] = sampling.settings.topK;
  table[base + LaneField.greedy] = sampling.greedy ? 1 : 0;
}

interface SampleCommon {
  readonly out: DevicePointer;
  readonly outStride: number;
  readonly outOffset: number;
  /** fp32 [lanes, count] with rows `logitsStride` elements apart. */
  readonly logits: DevicePointer;
  readonly logitsStride: number;
  readonly count: number;
  readonly laneTable: DevicePointer;
  readonly lanes: number;
}

function checkCommon(a: SampleCommon): void {
  requireCount(a.lanes, 'lanes', 1, 1 << 16);
  requireCount(a.count, 'count', 1, SAMPLER_MAX_CANDIDATES);
  requireCount(a.logitsStride, 'logitsStride', a.count);
  requireCount(a.outStride, 'outStride', 1);
  requireCount(a.outOffset, 'outOffset', 0, a.outStride - 1);
}

export function sampleMain(
  cuda: CudaContext,
  a: SampleCommon & { readonly semanticCount: number; readonly rasWindow: DevicePointer },
  options: LaunchOptions = {},
): void {
  checkCommon(a);
  requireCount(a.semanticCount, 'semanticCount', 0, a.count);
  const args = new KernelArguments()
    .pointer(a.out)
    .int32(a.outStride)
    .int32(a.outOffset)
    .pointer(a.logits)
    .int64(a.logitsStride)
    .int32(a.count)
    .int32(a.semanticCount)
    .pointer(a.laneTable)
    .pointer(a.rasWindow);
  launchSampler(cuda, SAMPLE_MAIN, a.lanes, args, options);
}

export function sampleCode(
  cuda: CudaContext,
  a: SampleCommon & { readonly column: number },
  options: LaunchOptions = {},
): void {
  checkCommon(a);
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
  launchSampler(cuda, SAMPLE_CODE, a.lanes, args, options);
}
