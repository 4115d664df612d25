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
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

/**
 * fp32 weights (the checking mode); fp16 weights rounded to nearest even with fp32 inputs on the CUDA cores; or `f16`,
 * as the release's vocoder runs: fp16 weights and fp16 inputs on tensor cores (codec_conv_mma.cuh). Sums are fp32 in
 * every mode.
 */
export type CodecPrecision = 'f32' | 'f16-weights' | 'f16';
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
const MMA_KERNEL: KernelName = { family: FAMILY, name: 'codec_conv_mma_f16' };
const MMA_SPLIT_KERNEL: KernelName = { family: FAMILY, name: 'codec_conv_mma_split_f16' };
const COMBINE_KERNEL: KernelName = { family: FAMILY, name: 'codec_conv_combine' };
const HISTORY_KERNEL: KernelName = { family: FAMILY, name: 'codec_history_update' };
const SNAKE_KERNEL: KernelName = { family: FAMILY, name: 'codec_snake' };

/** The kernels' fixed shapes (codec_conv.cuh): output channels per block, rows per thread, channels per chunk. */
const THREADS = 128;
const ROWS_PER_TILE = 8;
const CHUNK_CHANNELS = 32;
/** Threads of the narrow conv's block: one per (row, output), ⌊128 / outputs⌋ rows. */
const NARROW_THREADS = 128;
/** Up to this many outputs the narrow conv runs (the chunked kernel would leave most of its 128 threads idle). */
export const CODEC_NARROW_MAXIMUM_OUTPUTS = 8;
const HISTORY_THREADS = 128;
const SNAKE_THREADS = 256;
const MAXIMUM_GRID_Y = 65535;
/** Staged rows beyond a tile's own: the tile of (8 + history) × 32 fp32 stays within the default 48 KiB. */
export const CODEC_MAXIMUM_HISTORY_ROWS = 256;

const NULL_POINTER = 0n;
/** The conv kernel's parameter count (more than KernelArguments' default 16). */
const CONV_ARGUMENTS = 18;
/** The tensor-core conv's: the conv's and the partial sums (pointer, rows). */
const MMA_ARGUMENTS = 20;
const COMBINE_ARGUMENTS = 13;

/** The conv's last step (codec_conv.cuh); gelu is the exact one, x · Φ(x). */
export type CodecActivation = 'identity' | 'tanh' | 'gelu';
const ACTIVATION_CODES: Record<CodecActivation, number> = { identity: 0, tanh: 1, gelu: 2 };

/**
 * The chunked kernel (128 outputs × 8 rows a block, a thread per output), the narrow one (a thread per row and
 * output) or the register-tiled one (128 outputs × 64 rows a block, 8 × 8 a thread). All three sum every output in
 * the same order, so they give the same bits; the choice is speed alone.
 */
export type CodecConvVariant = 'chunked' | 'narrow' | 'tiled' | 'mma' | 'mma-split';
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

/** The tensor-core conv's fixed shapes (codec_conv_mma.cuh): 256 threads, 128 rows × 128 outputs a block. */
const MMA_THREADS = 256;
const MMA_BLOCK_ROWS = 128;
const MMA_BLOCK_OUTPUTS = 128;
const MMA_WEIGHT_STRIDE = MMA_BLOCK_OUTPUTS + 8;
export const CODEC_MMA_MAXIMUM_KERNEL = 8;

/** Input channels the tensor-core conv stages at a time (codec_conv_mma.cuh mma_stage_channels). */
function mmaStageChannels(kernel: number): number {
  if (kernel === 1) return 64;
  return kernel <= 2 ? 32 : 16;
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

/** Shared bytes of the tensor-core conv: two fp16 weight stages [K][S][136] and the fp16 input tile [rows][S + 8]. */
export function mmaSharedBytes(kernel: number, historyRows: number): number {
  const channels = mmaStageChannels(kernel);
  return 2 * (2 * kernel * channels * MMA_WEIGHT_STRIDE + (MMA_BLOCK_ROWS + historyRows) * (channels + 8));
}

/** Kernels whose shared-memory limit has been raised, to the bytes asked for. */
const raisedLimits = new Map<bigint, number>();

/** Past 48 KiB a kernel must be allowed its dynamic shared memory first (once per kernel and size). */
function allowShared(cuda: CudaContext, kernel: KernelName, options: LaunchOptions, bytes: number): void {
  const chosen = options.kernel ?? kernel;
  const handle = cuda.kernels.kernel(chosen.family, chosen.name);
  if ((raisedLimits.get(handle) ?? 48 * 1024) >= bytes) return;
  cuda.driver.setMaxDynamicSharedBytes(handle, bytes);
  raisedLimits.set(handle, bytes);
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

/** The tensor-core conv's grid: 128 outputs × one tile of 128 rows a block (× each group, split), one sequence each. */
function mmaShape(outputs: number, rows: number, sequenceCount: number, groups: number, sharedBytes: number) {
  const rowTiles = Math.min(MAXIMUM_GRID_Y, Math.ceil(rows / MMA_BLOCK_ROWS));
  return {
    grid: [Math.ceil(outputs / MMA_BLOCK_OUTPUTS) * groups, rowTiles, sequenceCount] as const,
    block: [MMA_THREADS, 1, 1] as const,
    sharedBytes,
  };
}

/** Where a split tensor-core conv writes its groups' sums: [groups, rows, outputs] fp32. */
export interface CodecPartials {
  readonly pointer: DevicePointer;
  /** Rows of the call at this layer, all sequences together (the rows of out the table addresses). */
  readonly rows: number;
  readonly bytes: number;
}

/** Whether a tensor-core conv runs split: it has groups, its unsplit grid is small, and its sums fit. */
function splitsOnTensorCores(a: CodecConvArguments, rows: number): boolean {
  if (a.partials === undefined) return false;
  const groups = Math.ceil(a.inputs / mmaGroupChannels(a.kernel));
  const blocks = Math.ceil(a.outputs / MMA_BLOCK_OUTPUTS) * Math.ceil(rows / MMA_BLOCK_ROWS) * a.sequenceCount;
  const fits = groups * a.partials.rows * a.outputs * 4 <= a.partials.bytes;
  return groups > 1 && blocks < CODEC_MMA_SPLIT_BELOW_BLOCKS && fits;
}

/** Whether the tiled transposed conv can run a layer: its stride divides 8 and its kernel, K ≤ 16. */
export function tileableTransposed(kernel: number, stride: number): boolean {
  return 8 % stride === 0 && kernel % stride === 0 && kernel <= CODEC_TILED_TRANSPOSED_MAXIMUM_KERNEL;
}

/** The transposed conv kernel when none is named: tiled where it can run, for more than a few outputs. */
export function automaticTransposedVariant(outputs: number, kernel: number, stride: number): CodecTransposedVariant {
  return tileableTransposed(kernel, stride) && outputs > CODEC_NARROW_MAXIMUM_OUTPUTS ? 'tiled' : 'chunked';
}

/** What every conv of a call shares: the sequence table and how many rows one table unit is at this layer. */
export interface CodecCall {
  /** int32 [Q, 4] = (slot, firstRow, rowCount, startPosition), rows in table units (frames). */
  readonly sequences: DevicePointer;
  readonly sequenceCount: number;
  /** Rows of the longest sequence, in table units (bounds the grid; a longer one is still walked whole). */
  readonly longestSequence: number;
  /** This layer's input rows per table unit. */
  readonly rowScale: number;
}

export interface CodecConvArguments extends CodecCall {
  /** [T, outputs] fp32, rows outStride apart. */
  readonly out: DevicePointer;
  readonly outStride: number;
  /** [T, inputs] fp32, rows xStride apart; must not overlap out. */
  readonly x: DevicePointer;
  readonly xStride: number;
  /** [inputs, kernel, outputs] fp32 or fp16 (codecConvWeightLayout). */
  readonly weight: DevicePointer;
  /** [outputs] added to the conv, or undefined (none read). */
  readonly bias?: DevicePointer;
  /** Snake's [inputs] α applied to x, or undefined. */
  readonly alpha?: DevicePointer;
  /** [T, outputs] added after the conv (a residual unit), rows residualStride apart, or undefined. */
  readonly residual?: DevicePointer;
  readonly residualStride?: number;
  /** [outputs] LayerScale / ConvNeXt γ: out = residual + scale · (conv + bias) in one fma (scale · value alone). */
  readonly scale?: DevicePointer;
  /** [S, (kernel − 1)·dilation, inputs] fp32; read only (codecHistoryUpdate writes it after the conv). */
  readonly history: DevicePointer;
  readonly inputs: number;
  readonly outputs: number;
  readonly kernel: number;
  readonly dilation: number;
  readonly activation?: CodecActivation;
  readonly precision: CodecPrecision;
  /**
   * Default: automaticConvVariant, and an mma conv of few rows split when `partials` holds its sums (the CUDA-core
   * variants give the same bits, as do mma and mma-split; the contract forces each).
   */
  readonly variant?: CodecConvVariant;
  /** Scratch for the split tensor-core conv's groups' sums; without it the conv runs unsplit. */
  readonly partials?: CodecPartials;
}

/** The call's table sizes, as every codec launcher checks them. */
export function requireCall(a: CodecCall): void {
  requireCount(a.sequenceCount, 'sequenceCount', 1, 65535);
  requireCount(a.longestSequence, 'longestSequence');
  requireCount(a.rowScale, 'rowScale', 1, 2 ** 20);
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
    sharedBytes: (blockRows + historyRows) * CHUNK_CHANNELS * 4,
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

/** The conv's arguments in codec_conv.cuh's order, the first 18 of every conv entry. */
function convArguments(a: CodecConvArguments, count: number): KernelArguments {
  return new KernelArguments(count)
    .pointer(a.out)
    .int64(a.outStride)
    .pointer(a.x)
    .int64(a.xStride)
    .pointer(a.weight)
    .pointer(a.bias ?? NULL_POINTER)
    .pointer(a.alpha ?? NULL_POINTER)
    .pointer(a.residual ?? NULL_POINTER)
    .int64(a.residual === undefined ? 0 : (a.residualStride ?? 0))
    .pointer(a.scale ?? NULL_POINTER)
    .pointer(a.history)
    .pointer(a.sequences)
    .int32(a.rowScale)
    .int32(a.inputs)
    .int32(a.outputs)
    .int32(a.kernel)
    .int32(a.dilation)
    .int32(ACTIVATION_CODES[a.activation ?? 'identity']);
}

/**
 * The tensor-core conv: unsplit, or each group of input channels on blocks of its own writing its sum to the
 * partials, then codec_conv_combine adding them in order with the epilogue (the same bits). A control kernel in
 * `options` replaces the conv kernel, or the combine kernel when it is one.
 */
function mmaConv(cuda: CudaContext, a: CodecConvArguments, split: boolean, rows: number, options: LaunchOptions) {
  const groups = Math.ceil(a.inputs / mmaGroupChannels(a.kernel));
  const partials = a.partials;
  if (split && (partials === undefined || groups * partials.rows * a.outputs * 4 > partials.bytes)) {
    throw new DramaError(
      'KERNEL_ARGUMENT_INVALID',
      `the split tensor-core conv needs ${groups} × rows × ${a.outputs} fp32 partial sums, and its partials do not hold them`,
      { kind: 'internal', param: 'partials' },
    );
  }
  const combineControl = options.kernel?.name.includes('combine') ?? false;
  const convOptions = combineControl ? { ...options, kernel: undefined } : options;
  const kernel = split ? MMA_SPLIT_KERNEL : MMA_KERNEL;
  const shared = mmaSharedBytes(a.kernel, (a.kernel - 1) * a.dilation);
  const args = convArguments(a, MMA_ARGUMENTS)
    .pointer(partials?.pointer ?? NULL_POINTER)
    .int64(partials?.rows ?? 0);
  allowShared(cuda, kernel, convOptions, shared);
  launch(cuda, kernel, mmaShape(a.outputs, rows, a.sequenceCount, split ? groups : 1, shared), args, convOptions);
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
  const combineShape = tileShape(a.outputs, rows, a.sequenceCount, 0);
  launch(cuda, COMBINE_KERNEL, { ...combineShape, sharedBytes: 0 }, combine, combineControl ? options : {});
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
