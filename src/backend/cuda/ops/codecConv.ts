// Launchers for kernels/cuda/codec_conv.cu (its header has the formulas and layouts): the codec decoder's causal
// dilated conv (at k = 1 also the codec's linears, with optional bias, scaled residual and GELU) and causal
// transposed conv over many lanes, each with Snake fused on its input, the history update
// that carries each lane's last input rows in a slab indexed by slot, and Snake alone. The grid depends on the
// sizes only, and every output's reduction order on (inputs, kernel) alone, so a lane's samples do not depend on
// the chunk or the lanes beside it. Weights are laid out once at load (codecWeightLayout.ts).
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import {
  CONV_ARGUMENTS,
  type CodecActivation,
  type CodecCall,
  type CodecConvArguments,
  type CodecConvVariant,
  type CodecPartials,
  type CodecPrecision,
  type CodecStaged,
  convArguments,
  NULL_POINTER,
  requireCall,
} from './codecConvArguments.ts';
import { CODEC_MMA_MAXIMUM_KERNEL, mmaConv, splitsOnTensorCores } from './codecConvMma.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';
import { allowShared } from './sharedLimit.ts';

export {
  CODEC_MMA_SPLIT_BELOW_BLOCKS,
  mmaGroupChannels,
  mmaSharedBytes,
  mmaStagedBytes,
  mmaStagedStride,
} from './codecConvMma.ts';
export type {
  CodecActivation,
  CodecCall,
  CodecConvArguments,
  CodecConvVariant,
  CodecPartials,
  CodecPrecision,
  CodecStaged,
};
export { requireCall };

/** The CUDA-core kernels' weight types: `f16` runs its few-output layers on the fp16-weight ones. */
type CoreWeights = 'f32' | 'f16-weights';
const coreWeights = (precision: CodecPrecision): CoreWeights => (precision === 'f32' ? 'f32' : 'f16-weights');

const FAMILY = 'codec_conv';
const CONV_KERNELS: Record<CoreWeights, KernelName> = {
  f32: { family: FAMILY, name: 'codec_conv_f32' },
  'f16-weights': { family: FAMILY, name: 'codec_conv_f16w' },
};
const TILED_KERNELS: Record<CoreWeights, KernelName> = {
  f32: { family: FAMILY, name: 'codec_conv_tiled_f32' },
  'f16-weights': { family: FAMILY, name: 'codec_conv_tiled_f16w' },
};
const TILED_TRANSPOSED_KERNELS: Record<CoreWeights, KernelName> = {
  f32: { family: FAMILY, name: 'codec_transposed_conv_tiled_f32' },
  'f16-weights': { family: FAMILY, name: 'codec_transposed_conv_tiled_f16w' },
};
const NARROW_KERNELS: Record<CoreWeights, KernelName> = {
  f32: { family: FAMILY, name: 'codec_conv_narrow_f32' },
  'f16-weights': { family: FAMILY, name: 'codec_conv_narrow_f16w' },
};
const TRANSPOSED_KERNELS: Record<CoreWeights, KernelName> = {
  f32: { family: FAMILY, name: 'codec_transposed_conv_f32' },
  'f16-weights': { family: FAMILY, name: 'codec_transposed_conv_f16w' },
};
const HISTORY_KERNEL: KernelName = { family: FAMILY, name: 'codec_history_update' };
const SNAKE_KERNEL: KernelName = { family: FAMILY, name: 'codec_snake' };

/** The kernels' fixed shapes (codec_conv.cuh): output channels per block, rows per thread, channels per chunk. */
const THREADS = 128;
const ROWS_PER_TILE = 8;
const CHUNK_CHANNELS = 32;
/** Threads of the narrow conv's block: one per (row, output), ⌊128 / outputs⌋ rows. */
const NARROW_THREADS = 128;
/** Floats between the narrow conv's staged rows: one past the chunk, so that its rows fall in distinct banks. */
const NARROW_STRIDE = CHUNK_CHANNELS + 1;
/** Up to this many outputs the narrow conv runs (the chunked kernel would leave most of its 128 threads idle). */
export const CODEC_NARROW_MAXIMUM_OUTPUTS = 8;
const HISTORY_THREADS = 128;
const MAXIMUM_GRID_Y = 65535;
const SNAKE_THREADS = 256;
/** Staged rows beyond a tile's own: the tile of (8 + history) × 32 fp32 stays within the default 48 KiB. */
export const CODEC_MAXIMUM_HISTORY_ROWS = 256;

export type CodecTransposedVariant = 'chunked' | 'tiled';

/** The register-tiled kernels' fixed shapes (codec_conv_tiled.cuh). */
const TILED_BLOCK_OUTPUTS = 128;
const TILED_BLOCK_ROWS = 64;
const WEIGHT_BYTES: Record<CoreWeights, number> = { f32: 4, 'f16-weights': 2 };

/** Input channels a tiled kernel stages at a time (codec_conv_tiled.cuh tiled_stage_channels). */
function tiledStageChannels(kernel: number): number {
  if (kernel === 1) return 32;
  return kernel <= 8 ? 8 : 4;
}

/**
 * Shared bytes of a tiled kernel: two weight stages [channels][K][128] and one input stage [channels][rows], its
 * rows padded to an odd count (codec_conv_tiled.cuh tiled_input_stride).
 */
export function tiledSharedBytes(precision: CodecPrecision, kernel: number, inputRows: number): number {
  const channels = tiledStageChannels(kernel);
  const weights = 2 * channels * kernel * TILED_BLOCK_OUTPUTS * WEIGHT_BYTES[coreWeights(precision)];
  return weights + channels * (inputRows | 1) * 4;
}

export const CODEC_TILED_MAXIMUM_KERNEL = 8;
export const CODEC_TILED_TRANSPOSED_MAXIMUM_KERNEL = 16;

/**
 * The conv kernel that runs a layer when none is named: narrow for a few outputs; in `f16` the tensor-core conv; else
 * tiled where its kernel fits (every codec layer), else chunked. The choice depends on the layer's sizes and the
 * precision alone, never on the call.
 */
export function automaticConvVariant(outputs: number, kernel: number, precision: CodecPrecision): CodecConvVariant {
  if (outputs <= CODEC_NARROW_MAXIMUM_OUTPUTS) return 'narrow';
  if (precision === 'f16') return 'mma';
  return kernel <= CODEC_TILED_MAXIMUM_KERNEL ? 'tiled' : 'chunked';
}

const onTensorCores = (variant: CodecConvVariant) => variant === 'mma' || variant === 'mma-split';

/** `f16` rounds the inputs for tensor cores, so only the mma and narrow variants run it (and mma runs only it). */
function requireVariantPrecision(variant: CodecConvVariant, precision: CodecPrecision): void {
  const fits = precision === 'f16' ? onTensorCores(variant) || variant === 'narrow' : !onTensorCores(variant);
  if (fits) return;
  throw new DramaError('KERNEL_ARGUMENT_INVALID', `the ${variant} codec conv does not run the ${precision} precision`, {
    kind: 'internal',
    param: 'variant',
  });
}

/** Whether the tiled transposed conv can run a layer: its stride divides 8 and its kernel, K ≤ 16. */
export function tileableTransposed(kernel: number, stride: number): boolean {
  return 8 % stride === 0 && kernel % stride === 0 && kernel <= CODEC_TILED_TRANSPOSED_MAXIMUM_KERNEL;
}

/** The transposed conv kernel when none is named: tiled where it can run, for more than a few outputs. */
export function automaticTransposedVariant(outputs: number, kernel: number, stride: number): CodecTransposedVariant {
  return tileableTransposed(kernel, stride) && outputs > CODEC_NARROW_MAXIMUM_OUTPUTS ? 'tiled' : 'chunked';
}

function requireStride(stride: number, name: string, atLeast: number): void {
  requireCount(stride, name, atLeast, 2 ** 40);
}

function requireHistory(rows: number): void {
  if (rows > CODEC_MAXIMUM_HISTORY_ROWS) {
    throw new DramaError(
      'KERNEL_ARGUMENT_INVALID',
      `a codec conv may carry at most ${CODEC_MAXIMUM_HISTORY_ROWS} history rows, got ${rows}`,
      { kind: 'internal', param: 'kernel' },
    );
  }
}

function tileShape(outputs: number, rows: number, sequenceCount: number, historyRows: number) {
  const rowTiles = Math.min(MAXIMUM_GRID_Y, Math.ceil(rows / ROWS_PER_TILE));
  return {
    grid: [Math.ceil(outputs / THREADS), rowTiles, sequenceCount] as const,
    block: [THREADS, 1, 1] as const,
    sharedBytes: (ROWS_PER_TILE + historyRows) * CHUNK_CHANNELS * 4,
  };
}

/** The tiled kernels' grid: 128 outputs × one tile of rows a block, one sequence each. */
function tiledShape(outputs: number, rowTiles: number, sequenceCount: number, sharedBytes: number) {
  return {
    grid: [Math.ceil(outputs / TILED_BLOCK_OUTPUTS), Math.min(MAXIMUM_GRID_Y, rowTiles), sequenceCount] as const,
    block: [THREADS, 1, 1] as const,
    sharedBytes,
  };
}

/** The narrow conv's grid: blocks of ⌊128 / outputs⌋ rows, one sequence each. */
function narrowShape(outputs: number, rows: number, sequenceCount: number, historyRows: number) {
  const blockRows = Math.floor(NARROW_THREADS / outputs);
  return {
    grid: [Math.min(MAXIMUM_GRID_Y, Math.ceil(rows / blockRows)), 1, sequenceCount] as const,
    block: [NARROW_THREADS, 1, 1] as const,
    sharedBytes: (blockRows + historyRows) * NARROW_STRIDE * 4,
  };
}

/**
 * The causal dilated conv of every sequence of the call (codecHistoryUpdate then carries its history). A kernel
 * given in `options` (a control) replaces the chosen variant's kernel and runs on its grid.
 */
export function codecConv(cuda: CudaContext, a: CodecConvArguments, options: LaunchOptions = {}): void {
  requireCall(a);
  requireCount(a.inputs, 'inputs');
  requireCount(a.outputs, 'outputs');
  requireCount(a.kernel, 'kernel', 1, 64);
  requireCount(a.dilation, 'dilation', 1, 64);
  requireStride(a.outStride, 'outStride', a.outputs);
  requireStride(a.xStride, 'xStride', a.inputs);
  if (a.residual !== undefined) requireStride(a.residualStride ?? 0, 'residualStride', a.outputs);
  const historyRows = (a.kernel - 1) * a.dilation;
  requireHistory(historyRows);
  const rows = a.longestSequence * a.rowScale;
  const automatic = automaticConvVariant(a.outputs, a.kernel, a.precision);
  const variant = a.variant ?? (automatic === 'mma' && splitsOnTensorCores(a, rows) ? 'mma-split' : automatic);
  requireVariantPrecision(variant, a.precision);
  if (onTensorCores(variant)) {
    requireCount(a.kernel, 'kernel of the tensor-core conv', 1, CODEC_MMA_MAXIMUM_KERNEL);
    mmaConv(cuda, a, variant === 'mma-split', rows, options);
    return;
  }
  if (variant === 'narrow') requireCount(a.outputs, 'outputs of the narrow conv', 1, CODEC_NARROW_MAXIMUM_OUTPUTS);
  if (variant === 'tiled') requireCount(a.kernel, 'kernel of the tiled conv', 1, CODEC_TILED_MAXIMUM_KERNEL);
  const args = convArguments(a, CONV_ARGUMENTS);
  const weights = coreWeights(a.precision);
  if (variant === 'narrow') {
    const shape = narrowShape(a.outputs, rows, a.sequenceCount, historyRows);
    allowShared(cuda, NARROW_KERNELS[weights], options, shape.sharedBytes);
    launch(cuda, NARROW_KERNELS[weights], shape, args, options);
  } else if (variant === 'tiled') {
    const shared = tiledSharedBytes(a.precision, a.kernel, TILED_BLOCK_ROWS + historyRows);
    const shape = tiledShape(a.outputs, Math.ceil(rows / TILED_BLOCK_ROWS), a.sequenceCount, shared);
    allowShared(cuda, TILED_KERNELS[weights], options, shared);
    launch(cuda, TILED_KERNELS[weights], shape, args, options);
  } else {
    launch(cuda, CONV_KERNELS[weights], tileShape(a.outputs, rows, a.sequenceCount, historyRows), args, options);
  }
}

export interface CodecTransposedConvArguments extends CodecCall {
  /** [T·stride, outputs] fp32. */
  readonly out: DevicePointer;
  readonly outStride: number;
  readonly x: DevicePointer;
  readonly xStride: number;
  /**
   * [inputs, kernel, outputs] (codecTransposedWeightLayout); in `f16`, [inputs, kernel/stride, stride·outputs]
   * (codecTransposedAsConvLayout), the conv the tensor cores run.
   */
  readonly weight: DevicePointer;
  /** [outputs]; in `f16`, [stride·outputs], the bias repeated per phase. */
  readonly bias: DevicePointer;
  readonly alpha?: DevicePointer;
  /** [S, ⌈kernel/stride⌉ − 1, inputs] fp32; read only. */
  readonly history: DevicePointer;
  readonly inputs: number;
  readonly outputs: number;
  readonly kernel: number;
  readonly stride: number;
  /** In `f16`, scratch for a split conv's sums (its rows: the call's input rows); see CodecConvArguments. */
  readonly partials?: CodecPartials;
  /** The tensor-core conv's staged inputs' scratch (f16 only). */
  readonly staged?: CodecStaged;
  readonly precision: CodecPrecision;
  /** Default: automaticTransposedVariant (both give the same bits; the contract forces each). */
  readonly variant?: CodecTransposedVariant;
}

/** Rows of input a transposed conv carries: ⌈K/s⌉ − 1. */
export function transposedHistoryRows(kernel: number, stride: number): number {
  return Math.ceil(kernel / stride) - 1;
}

/** The causal transposed conv (upsampling by `stride`) of every sequence of the call. */
export function codecTransposedConv(
  cuda: CudaContext,
  a: CodecTransposedConvArguments,
  options: LaunchOptions = {},
): void {
  requireCall(a);
  requireCount(a.inputs, 'inputs');
  requireCount(a.outputs, 'outputs');
  requireCount(a.stride, 'stride', 1, 64);
  requireCount(a.kernel, 'kernel', a.stride, 64 * a.stride);
  requireStride(a.outStride, 'outStride', a.outputs);
  requireStride(a.xStride, 'xStride', a.inputs);
  const historyRows = transposedHistoryRows(a.kernel, a.stride);
  requireHistory(historyRows);
  if (a.precision === 'f16') {
    transposedOnTensorCores(cuda, a, options);
    return;
  }
  const args = new KernelArguments()
    .pointer(a.out)
    .int64(a.outStride)
    .pointer(a.x)
    .int64(a.xStride)
    .pointer(a.weight)
    .pointer(a.bias)
    .pointer(a.alpha ?? NULL_POINTER)
    .pointer(a.history)
    .pointer(a.sequences)
    .int32(a.rowScale)
    .int32(a.inputs)
    .int32(a.outputs)
    .int32(a.kernel)
    .int32(a.stride);
  const variant = a.variant ?? automaticTransposedVariant(a.outputs, a.kernel, a.stride);
  const weights = coreWeights(a.precision);
  const inputRows = a.longestSequence * a.rowScale;
  if (variant === 'tiled') {
    if (!tileableTransposed(a.kernel, a.stride)) {
      throw new DramaError(
        'KERNEL_ARGUMENT_INVALID',
        `the tiled transposed conv needs a stride dividing 8 and the kernel (≤ ${CODEC_TILED_TRANSPOSED_MAXIMUM_KERNEL}), got kernel ${a.kernel}, stride ${a.stride}`,
        { kind: 'internal', param: 'stride' },
      );
    }
    const blockInputs = TILED_BLOCK_ROWS / a.stride;
    const shared = tiledSharedBytes(a.precision, a.kernel, blockInputs + historyRows);
    const shape = tiledShape(a.outputs, Math.ceil(inputRows / blockInputs), a.sequenceCount, shared);
    allowShared(cuda, TILED_TRANSPOSED_KERNELS[weights], options, shared);
    launch(cuda, TILED_TRANSPOSED_KERNELS[weights], shape, args, options);
    return;
  }
  const shape = tileShape(a.outputs, inputRows * a.stride, a.sequenceCount, historyRows);
  launch(cuda, TRANSPOSED_KERNELS[weights], shape, args, options);
}

/**
 * A transposed conv as the conv of its input rows it is: output row n·s + j is phase j of row n's s·Cout outputs,
 * Σ_i Σ_{q<m} w[i, j + q·s] · in[n − q, i], so the rows [T·s, Cout] are the bytes of [T, s·Cout] and conv tap
 * m − 1 − q meets input row n − q.
 */
function transposedOnTensorCores(cuda: CudaContext, a: CodecTransposedConvArguments, options: LaunchOptions): void {
  if (a.kernel % a.stride !== 0 || a.outStride !== a.outputs) {
    throw new DramaError(
      'KERNEL_ARGUMENT_INVALID',
      `the tensor-core transposed conv needs the stride to divide the kernel and contiguous output rows, got kernel ${a.kernel}, stride ${a.stride}, outStride ${a.outStride} for ${a.outputs} outputs`,
      { kind: 'internal', param: 'stride' },
    );
  }
  const outputs = a.stride * a.outputs;
  const conv = { ...a, outStride: outputs, outputs, kernel: a.kernel / a.stride, dilation: 1 };
  codecConv(cuda, { ...conv, precision: 'f16', variant: 'mma' }, options);
}

export interface CodecHistoryArguments {
  /** [S, historyRows, channels] fp32, updated in place. */
  readonly history: DevicePointer;
  /** The conv's input of this call (before Snake), rows xStride apart. */
  readonly x: DevicePointer;
  readonly xStride: number;
  readonly alpha?: DevicePointer;
  readonly sequences: DevicePointer;
  readonly sequenceCount: number;
  readonly rowScale: number;
  readonly channels: number;
  readonly historyRows: number;
}

/** Keeps each sequence's last historyRows conv inputs (after Snake) for its next call; a no-op for 0 rows. */
export function codecHistoryUpdate(cuda: CudaContext, a: CodecHistoryArguments, options: LaunchOptions = {}): void {
  requireCount(a.sequenceCount, 'sequenceCount', 1, 65535);
  requireCount(a.rowScale, 'rowScale', 1, 2 ** 20);
  requireCount(a.channels, 'channels');
  requireCount(a.historyRows, 'historyRows', 0, CODEC_MAXIMUM_HISTORY_ROWS);
  requireStride(a.xStride, 'xStride', a.channels);
  if (a.historyRows === 0) return;
  const args = new KernelArguments()
    .pointer(a.history)
    .pointer(a.x)
    .int64(a.xStride)
    .pointer(a.alpha ?? NULL_POINTER)
    .pointer(a.sequences)
    .int32(a.rowScale)
    .int32(a.channels)
    .int32(a.historyRows);
  const grid = [Math.ceil(a.channels / HISTORY_THREADS), 1, a.sequenceCount] as const;
  launch(cuda, HISTORY_KERNEL, { grid, block: [HISTORY_THREADS, 1, 1] }, args, options);
}

export interface CodecSnakeArguments {
  /** [rows, channels] fp32, contiguous; may alias x. */
  readonly out: DevicePointer;
  readonly x: DevicePointer;
  readonly alpha: DevicePointer;
  readonly rows: number;
  readonly channels: number;
}

/** Snake alone: x + sin²(αx)/(α + 1e-9), the function the convs apply to their inputs. */
export function codecSnake(cuda: CudaContext, a: CodecSnakeArguments, options: LaunchOptions = {}): void {
  requireCount(a.rows, 'rows');
  requireCount(a.channels, 'channels');
  requireCount(a.rows * a.channels, 'rows × channels', 1, 2 ** 40);
  const args = new KernelArguments().pointer(a.out).pointer(a.x).pointer(a.alpha).int64(a.rows).int32(a.channels);
  const grid = [Math.ceil((a.rows * a.channels) / SNAKE_THREADS), 1, 1] as const;
  launch(cuda, SNAKE_KERNEL, { grid, block: [SNAKE_THREADS, 1, 1] }, args, options);
}
