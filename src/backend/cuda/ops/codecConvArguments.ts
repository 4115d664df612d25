// What every codec conv launcher shares (codecConv.ts, codecConvMma.ts): the precisions and variants, a call's
// arguments in the order kernels/cuda/codec_conv.cuh declares them, and the table checks.
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { requireCount } from './launch.ts';

/**
 * fp32 weights (the checking mode); fp16 weights rounded to nearest even with fp32 inputs on the CUDA cores; or `f16`,
 * as the release's vocoder runs: fp16 weights and fp16 inputs on tensor cores (codec_conv_mma.cuh). Sums are fp32 in
 * every mode.
 */
export type CodecPrecision = 'f32' | 'f16-weights' | 'f16';

export const NULL_POINTER = 0n;
/** The conv kernel's parameter count (more than KernelArguments' default 16). */
export const CONV_ARGUMENTS = 18;

/** The conv's last step (codec_conv.cuh); gelu is the exact one, x · Φ(x). */
export type CodecActivation = 'identity' | 'tanh' | 'gelu';
export const ACTIVATION_CODES: Record<CodecActivation, number> = { identity: 0, tanh: 1, gelu: 2 };

/**
 * The chunked kernel (128 outputs × 8 rows a block, a thread per output), the narrow one (a thread per row and
 * output) or the register-tiled one (128 outputs × 64 rows a block, 8 × 8 a thread). All three sum every output in
 * the same order, so they give the same bits; the choice is speed alone.
 */
export type CodecConvVariant = 'chunked' | 'narrow' | 'tiled' | 'mma' | 'mma-split';

/** Where a split tensor-core conv writes its groups' sums: [groups, rows, outputs] fp32. */
export interface CodecPartials {
  readonly pointer: DevicePointer;
  /** Rows of the call at this layer, all sequences together (the rows of out the table addresses). */
  readonly rows: number;
  readonly bytes: number;
}

/**
 * Where a staged tensor-core conv finds its inputs put through Snake and rounded to fp16 once for the layer
 * (codec_conv_stage_f16): each sequence's carried rows then its rows, one region a sequence, rows of Cin rounded up
 * to 8 fp16 (codecConvMma.ts mmaStagedBytes).
 */
export interface CodecStaged {
  readonly pointer: DevicePointer;
  /** Rows of the call at this layer, all sequences together (the rows of x the table addresses). */
  readonly rows: number;
  readonly bytes: number;
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
  /** Scratch for the tensor-core conv's inputs staged once a layer; without room there each block stages its own. */
  readonly staged?: CodecStaged;
}

/** The call's table sizes, as every codec launcher checks them. */
export function requireCall(a: CodecCall): void {
  requireCount(a.sequenceCount, 'sequenceCount', 1, 65535);
  requireCount(a.longestSequence, 'longestSequence');
  requireCount(a.rowScale, 'rowScale', 1, 2 ** 20);
}

/** The conv's arguments in codec_conv.cuh's order, the first 18 of every conv entry. */
export function convArguments(a: CodecConvArguments, count: number): KernelArguments {
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
