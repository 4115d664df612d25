// The launcher of the codec's tensor-core conv (kernels/cuda/codec_conv_mma.cuh, the `f16` precision): its shapes,
// when a call of few rows splits its channel groups across blocks (then codec_conv_combine adds them in order: the
// same bits), when its inputs are staged once for the layer (codec_conv_stage_f16, then the staged entries: the same
// bits), and the launches. codecConv.ts chooses it.
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import { KernelArguments } from '../kernelArguments.ts';
import {
  ACTIVATION_CODES,
  type CodecConvArguments,
  type CodecStaged,
  convArguments,
  NULL_POINTER,
} from './codecConvArguments.ts';
import { type KernelName, type LaunchOptions, launch } from './launch.ts';
import { allowShared } from './sharedLimit.ts';

const FAMILY = 'codec_conv';
const MMA_KERNEL: KernelName = { family: FAMILY, name: 'codec_conv_mma_f16' };
const MMA_SPLIT_KERNEL: KernelName = { family: FAMILY, name: 'codec_conv_mma_split_f16' };
const MMA_STAGED_KERNEL: KernelName = { family: FAMILY, name: 'codec_conv_mma_staged_f16' };
const MMA_STAGED_SPLIT_KERNEL: KernelName = { family: FAMILY, name: 'codec_conv_mma_staged_split_f16' };
const STAGE_KERNEL: KernelName = { family: FAMILY, name: 'codec_conv_stage_f16' };
const COMBINE_KERNEL: KernelName = { family: FAMILY, name: 'codec_conv_combine' };
/** The tensor-core conv's parameters: the conv's, the partial sums (pointer, rows), the staged rows; the others'. */
const MMA_ARGUMENTS = 25;
const COMBINE_ARGUMENTS = 13;
const STAGE_ARGUMENTS = 10;
/** The staging kernel's block: threads on four channels each, over 32 padded rows (codec_conv_mma_staging.cuh). */
const STAGE_THREADS = 256;
const STAGE_ROWS = 32;
const MAXIMUM_GRID_X = 2 ** 31 - 1;
/** The combine's block: a thread per output of 128, 8 rows a block (codec_conv_mma.cuh mma_combine). */
const COMBINE_THREADS = 128;
const COMBINE_ROWS = 8;
const MAXIMUM_GRID_Y = 65535;

/** The tensor-core conv's threads (codec_conv_mma.cuh): 8 warps of 32 rows × 64 outputs. */
const MMA_THREADS = 256;
/** Layers of at most this many outputs take the tall block, every warp along rows (codec_conv_mma_staging.cuh). */
const MMA_TALL_OUTPUTS = 64;
export const CODEC_MMA_MAXIMUM_KERNEL = 8;

/** A block's rows and outputs (codec_conv_mma_staging.cuh mma_shape): 128 × 128, or 256 × 64 for few outputs. */
export function mmaBlockShape(outputs: number): { rows: number; outputs: number } {
  return outputs <= MMA_TALL_OUTPUTS ? { rows: 256, outputs: MMA_TALL_OUTPUTS } : { rows: 128, outputs: 128 };
}

/** Input channels a stage of the wide block, the quantum a group's width is summed in (mma_stage_quantum). */
function mmaStageQuantum(kernel: number): number {
  if (kernel === 1) return 64;
  return kernel <= 2 ? 32 : 16;
}

/** Input channels the tensor-core conv stages at a time (mma_stage_channels): half a quantum at k = 1 in the tall block. */
function mmaStageChannels(kernel: number, blockOutputs: number): number {
  return kernel === 1 && blockOutputs === MMA_TALL_OUTPUTS ? 32 : mmaStageQuantum(kernel);
}

/** Input channels a group of the tensor-core conv sums from zero (codec_conv_mma.cuh mma_group_channels). */
export function mmaGroupChannels(kernel: number): number {
  return kernel === 1 ? 128 : 64;
}

/**
 * Below this many blocks an unsplit tensor-core conv leaves the GPU mostly idle (a frame's convs have 6 to 48), and
 * its groups go to blocks of their own. Split and unsplit give the same bits, so the choice may follow the call.
 */
export const CODEC_MMA_SPLIT_BELOW_BLOCKS = 264;

/**
 * Shared bytes of the tensor-core conv: the tile rows' rows of out (8 bytes each), then two fp16 weight stages
 * [K][S][block outputs + 8], the fp16 input tile [rows + history][S + 8] and the next stage's raw fp32 inputs
 * [rows + history][S], or, staged, two fp16 input tiles; at least the epilogue's fp32 sums [rows][block outputs + 8]
 * that reuse them.
 */
export function mmaSharedBytes(kernel: number, historyRows: number, outputs: number, staged = false): number {
  const block = mmaBlockShape(outputs);
  const channels = mmaStageChannels(kernel, block.outputs);
  const tileRows = block.rows + historyRows;
  const weights = 2 * 2 * kernel * channels * (block.outputs + 8);
  const tile = 2 * tileRows * (channels + 8);
  const stages = staged ? weights + 2 * tile : weights + tile + 4 * tileRows * channels;
  const sums = 4 * block.rows * (block.outputs + 8);
  return 8 * block.rows + Math.max(stages, sums);
}

/** fp16 elements between staged input rows: Cin rounded up to 8, so that each 8-channel piece is one 16-byte copy. */
export function mmaStagedStride(inputs: number): number {
  return Math.ceil(inputs / 8) * 8;
}

/**
 * Bytes of a call's staged inputs: each sequence's region, its carried rows then its rows, at padded row
 * firstRow + index · H (codec_conv_mma_staging.cuh), mmaStagedStride fp16 each: `rows` (the call's) + Q·H rows.
 */
export function mmaStagedBytes(rows: number, sequenceCount: number, inputs: number, historyRows: number): number {
  return (rows + sequenceCount * historyRows) * mmaStagedStride(inputs) * 2;
}

/**
 * How the tensor-core conv tiles a call's rows: per sequence (grid z = the sequences, each from its first row), or,
 * staged, flat over the call's padded rows as one sequence when that takes fewer tiles (lanes of few rows each);
 * the same bits either way. Without room for the staged inputs each block stages its own, per sequence.
 */
interface MmaTiling {
  readonly staged?: CodecStaged;
  /** Staged rows the flat tiling covers: the call's rows and every sequence's carried rows. */
  readonly paddedRows: number;
  readonly flat: boolean;
  /** Row tiles per grid z. */
  readonly rowTiles: number;
  readonly gridZ: number;
}

function mmaTiling(a: CodecConvArguments, rows: number): MmaTiling {
  const blockRows = mmaBlockShape(a.outputs).rows;
  const historyRows = (a.kernel - 1) * a.dilation;
  const perSequence = { paddedRows: 0, flat: false, rowTiles: Math.ceil(rows / blockRows), gridZ: a.sequenceCount };
  const staged = a.staged;
  if (staged === undefined) return perSequence;
  if (mmaStagedBytes(staged.rows, a.sequenceCount, a.inputs, historyRows) > staged.bytes) return perSequence;
  const paddedRows = staged.rows + a.sequenceCount * historyRows;
  const flatTiles = Math.ceil(paddedRows / blockRows);
  const flat = flatTiles < perSequence.rowTiles * a.sequenceCount;
  return flat ? { staged, paddedRows, flat, rowTiles: flatTiles, gridZ: 1 } : { ...perSequence, staged, paddedRows };
}

/** The tensor-core conv's blocks along outputs (× each group, split) and rows (the tiling's, by grid y and z). */
function mmaShape(outputs: number, tiling: MmaTiling, groups: number, sharedBytes: number) {
  const block = mmaBlockShape(outputs);
  return {
    grid: [
      Math.ceil(outputs / block.outputs) * groups,
      Math.min(MAXIMUM_GRID_Y, tiling.rowTiles),
      tiling.gridZ,
    ] as const,
    block: [MMA_THREADS, 1, 1] as const,
    sharedBytes,
  };
}

const groupsOf = (a: CodecConvArguments) => Math.ceil(a.inputs / mmaGroupChannels(a.kernel));

/** Whether the call's partials hold its groups' sums, [groups, rows, outputs] fp32. */
function partialsHold(a: CodecConvArguments): boolean {
  return a.partials !== undefined && groupsOf(a) * a.partials.rows * a.outputs * 4 <= a.partials.bytes;
}

/** Whether a tensor-core conv runs split: it has groups, its unsplit grid is small, and its sums fit. */
export function splitsOnTensorCores(a: CodecConvArguments, rows: number): boolean {
  const block = mmaBlockShape(a.outputs);
  const tiling = mmaTiling(a, rows);
  const blocks = Math.ceil(a.outputs / block.outputs) * tiling.rowTiles * tiling.gridZ;
  return groupsOf(a) > 1 && blocks < CODEC_MMA_SPLIT_BELOW_BLOCKS && partialsHold(a);
}

/**
 * The tensor-core conv: unsplit, or each group of input channels on blocks of its own writing its sum to the
 * partials, then codec_conv_combine adding them in order with the epilogue (the same bits). A control kernel in
 * `options` replaces the conv kernel, or the combine kernel when it is one.
 */
export function mmaConv(
  cuda: CudaContext,
  a: CodecConvArguments,
  split: boolean,
  rows: number,
  options: LaunchOptions,
) {
  const groups = groupsOf(a);
  const partials = a.partials;
  if (split && !partialsHold(a)) {
    throw new DramaError(
      'KERNEL_ARGUMENT_INVALID',
      `the split tensor-core conv needs ${groups} × rows × ${a.outputs} fp32 partial sums, and its partials do not hold them`,
      { kind: 'internal', param: 'partials' },
    );
  }
  // A control kernel replaces the launch whose kernel it imitates: the combine, the staging or the conv.
  const controlled = options.kernel?.name ?? '';
  const combineControl = controlled.includes('combine');
  const stageControl = controlled.includes('conv_stage');
  const convOptions = combineControl || stageControl ? { ...options, kernel: undefined } : options;
  const tiling = mmaTiling(a, rows);
  const staged = tiling.staged;
  const historyRows = (a.kernel - 1) * a.dilation;
  const stride = mmaStagedStride(a.inputs);
  if (staged !== undefined) stageInputs(cuda, a, staged, stride, historyRows, rows, stageControl ? options : {});
  const kernels = staged === undefined ? [MMA_KERNEL, MMA_SPLIT_KERNEL] : [MMA_STAGED_KERNEL, MMA_STAGED_SPLIT_KERNEL];
  const kernel = kernels[split ? 1 : 0]!;
  const shared = mmaSharedBytes(a.kernel, historyRows, a.outputs, staged !== undefined);
  const args = convArguments(a, MMA_ARGUMENTS)
    .pointer(partials?.pointer ?? NULL_POINTER)
    .int64(partials?.rows ?? 0)
    .pointer(staged?.pointer ?? NULL_POINTER)
    .int64(tiling.paddedRows)
    .int32(staged === undefined ? 0 : stride)
    .int32(a.sequenceCount)
    .int32(tiling.flat ? 1 : 0);
  allowShared(cuda, kernel, convOptions, shared);
  launch(cuda, kernel, mmaShape(a.outputs, tiling, split ? groups : 1, shared), args, convOptions);
  if (!split || partials === undefined) return;
  const combine = new KernelArguments(COMBINE_ARGUMENTS)
    .pointer(a.out)
    .int64(a.outStride)
    .pointer(partials.pointer)
    .int64(partials.rows)
    .int32(groups)
    .pointer(a.bias ?? NULL_POINTER)
    .pointer(a.residual ?? NULL_POINTER)
    .int64(a.residual === undefined ? 0 : (a.residualStride ?? 0))
    .pointer(a.scale ?? NULL_POINTER)
    .pointer(a.sequences)
    .int32(a.rowScale)
    .int32(a.outputs)
    .int32(ACTIVATION_CODES[a.activation ?? 'identity']);
  const combineShape = {
    grid: [
      Math.ceil(a.outputs / COMBINE_THREADS),
      Math.min(MAXIMUM_GRID_Y, Math.ceil(rows / COMBINE_ROWS)),
      a.sequenceCount,
    ],
    block: [COMBINE_THREADS, 1, 1],
    sharedBytes: 0,
  } as const;
  launch(cuda, COMBINE_KERNEL, combineShape, combine, combineControl ? options : {});
}

/** codec_conv_stage_f16: the call's inputs through Snake and rounded to fp16 once, for the staged conv to copy. */
function stageInputs(
  cuda: CudaContext,
  a: CodecConvArguments,
  staged: CodecStaged,
  stride: number,
  historyRows: number,
  rows: number,
  options: LaunchOptions,
) {
  const args = new KernelArguments(STAGE_ARGUMENTS)
    .pointer(staged.pointer)
    .int32(stride)
    .pointer(a.x)
    .int64(a.xStride)
    .pointer(a.alpha ?? NULL_POINTER)
    .pointer(a.history)
    .pointer(a.sequences)
    .int32(a.rowScale)
    .int32(a.inputs)
    .int32(historyRows);
  // A block per 32 of the longest sequence's rows and carried rows; shorter sequences leave blocks idle.
  const shape = {
    grid: [Math.min(MAXIMUM_GRID_X, Math.ceil((rows + historyRows) / STAGE_ROWS)), 1, a.sequenceCount],
    block: [STAGE_THREADS, 1, 1],
    sharedBytes: 0,
  } as const;
  launch(cuda, STAGE_KERNEL, shape, args, options);
}
