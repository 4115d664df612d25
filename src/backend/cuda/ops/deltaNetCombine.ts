// Launcher for kernels/cuda/delta_net_combine.cu: the Gated DeltaNet input projection's split-K combine with the conv
// + SiLU and the gates in one launch, for decode calls (every sequence one row). Its outputs have the bits of
// gemmSegmentsCombine, then deltaNetConv and deltaNetGates (delta_net_combine.cuh says why), the projection's own
// outputs included.
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { combineShape, GEMM_SEGMENT_PARAMETER_COUNT, type LeftCombine, splitElements } from './gemmSegments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

const FAMILY = 'delta_net_combine';
const KERNEL: KernelName = { family: FAMILY, name: 'delta_net_combine_bf16' };
const BF16_PARAMETERS_KERNEL: KernelName = { family: FAMILY, name: 'delta_net_combine_bf16_parameters' };
/** The projection's segments, in the order delta-net-block.ts gives them. */
const SEGMENTS = ['q|k|v', 'z', 'b', 'a'] as const;
const EXTRA_PARAMETERS = 8;

export interface DeltaNetCombineArguments {
  /** The segmented GEMM's left combine: segments q|k|v [rows, C], z, b [rows, Vh], a [rows, Vh], q|k|v split. */
  readonly combine: LeftCombine;
  /** [rows, C] bf16, contiguous. */
  readonly convolved: DevicePointer;
  /** [C, 4] bf16. */
  readonly convWeight: DevicePointer;
  /** [S, 3, C] bf16, read and written for each sequence's slot. */
  readonly convState: DevicePointer;
  /** One entry per row: (slot, firstRow, rowCount = 1, startPosition). */
  readonly sequences: DevicePointer;
  readonly sequenceCount: number;
  /** [rows, Vh] fp32 each. */
  readonly g: DevicePointer;
  readonly beta: DevicePointer;
  /** [Vh] each, of parameterDtype (fp32 when left out). */
  readonly aLog: DevicePointer;
  readonly dtBias: DevicePointer;
  readonly parameterDtype?: 'f32' | 'bf16';
}

/** Whether a left combine is the DeltaNet projection this kernel takes: four bf16 segments, q|k|v split, b and a alike. */
export function combinesIntoDeltaNet(c: LeftCombine): boolean {
  return (
    c.outFeatures.length === SEGMENTS.length &&
    c.outputs.every((output) => output === 'bf16') &&
    (c.chunks[0] ?? 1) > 1 &&
    c.outFeatures[2] === c.outFeatures[3]
  );
}

function refuse(param: string, message: string): never {
  throw new DramaError('KERNEL_ARGUMENT_INVALID', `DeltaNet combine: ${message}`, { kind: 'internal', param });
}

export function deltaNetSegmentsCombine(
  cuda: CudaContext,
  a: DeltaNetCombineArguments,
  options: LaunchOptions = {},
): void {
  const { combine } = a;
  if (!combinesIntoDeltaNet(combine)) {
    refuse(
      'combine',
      `needs segments ${SEGMENTS.join(', ')} in bf16 with q|k|v split and b, a of one width: widths ` +
        `[${combine.outFeatures.join(', ')}], chunks [${combine.chunks.join(', ')}], outputs [${combine.outputs.join(', ')}]`,
    );
  }
  // Decode only: one row per sequence, so every row's conv reads the slot's history and nothing else.
  if (a.sequenceCount !== combine.rows) {
    refuse('sequenceCount', `every sequence must be one row: ${a.sequenceCount} sequences for ${combine.rows} rows`);
  }
  requireCount(a.sequenceCount, 'sequenceCount', 1, 65535);
  for (const [name, pointer] of Object.entries({ convolved: a.convolved, convState: a.convState, g: a.g })) {
    if (pointer === 0n) refuse(name, `${name} must be a device pointer`);
  }
  const elements = splitElements(combine) + combine.rows * combine.outFeatures[2]!;
  const args = combine
    .appendParameters(new KernelArguments(GEMM_SEGMENT_PARAMETER_COUNT + EXTRA_PARAMETERS))
    .pointer(a.convolved)
    .pointer(a.convWeight)
    .pointer(a.convState)
    .pointer(a.sequences)
    .pointer(a.g)
    .pointer(a.beta)
    .pointer(a.aLog)
    .pointer(a.dtBias);
  const kernel = a.parameterDtype === 'bf16' ? BF16_PARAMETERS_KERNEL : KERNEL;
  launch(cuda, kernel, combineShape(elements), args, options);
}
