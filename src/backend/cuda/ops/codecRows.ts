// Launchers for kernels/cuda/codec_rows.cu (its header has the formulas and layouts): the ConvNeXt block's causal
// depthwise conv over many lanes (each lane's carried rows in a slab by slot, carried on by codecHistoryUpdate with
// no α), its LayerNorm, and the quantizer's code lookup. Grids depend on the sizes only, and every output's
// reduction order on (kernel, width, codebookDim) alone. The quantizer's tables are stacked once at load by
// quantizerTables below.
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import type { CodecCall } from './codecConv.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

const FAMILY = 'codec_rows';
const DEPTHWISE_KERNEL: KernelName = { family: FAMILY, name: 'codec_depthwise_conv' };
const LAYER_NORM_KERNEL: KernelName = { family: FAMILY, name: 'codec_layer_norm' };
const QUANTIZER_KERNEL: KernelName = { family: FAMILY, name: 'codec_quantizer_decode' };

/** The kernels' fixed shapes (codec_rows.cuh). */
const DEPTHWISE_THREADS = 128;
const DEPTHWISE_ROWS = 8;
const LAYER_NORM_THREADS = 256;
const QUANTIZER_THREADS = 128;
const MAXIMUM_GRID_Y = 65535;

export interface CodecDepthwiseConvArguments extends CodecCall {
  /** [T, channels] fp32; must not overlap x. */
  readonly out: DevicePointer;
  /** [T, channels] fp32. */
  readonly x: DevicePointer;
  /** [channels, kernel] as PyTorch's [C, 1, K]. */
  readonly weight: DevicePointer;
  readonly bias: DevicePointer;
  /** [S, kernel − 1, channels] fp32; read only (codecHistoryUpdate with no α carries it after the conv). */
  readonly history: DevicePointer;
  readonly channels: number;
  readonly kernel: number;
}

/** Causal depthwise conv (ConvNeXt's dwconv): out[t, c] = bias[c] + Σ_tap w[c, tap] · in[t − (K − 1) + tap, c]. */
export function codecDepthwiseConv(
  cuda: CudaContext,
  a: CodecDepthwiseConvArguments,
  options: LaunchOptions = {},
): void {
  requireCount(a.sequenceCount, 'sequenceCount', 1, 65535);
  requireCount(a.longestSequence, 'longestSequence');
  requireCount(a.rowScale, 'rowScale', 1, 2 ** 20);
  requireCount(a.channels, 'channels');
  requireCount(a.kernel, 'kernel', 1, 64);
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.x)
    .pointer(a.weight)
    .pointer(a.bias)
    .pointer(a.history)
    .pointer(a.sequences)
    .int32(a.rowScale)
    .int32(a.channels)
    .int32(a.kernel);
  const rowTiles = Math.min(MAXIMUM_GRID_Y, Math.ceil((a.longestSequence * a.rowScale) / DEPTHWISE_ROWS));
  const grid = [Math.ceil(a.channels / DEPTHWISE_THREADS), rowTiles, a.sequenceCount] as const;
  launch(cuda, DEPTHWISE_KERNEL, { grid, block: [DEPTHWISE_THREADS, 1, 1] }, args, options);
}

export interface CodecLayerNormArguments {
  /** [rows, width] fp32; must not alias x. */
  readonly out: DevicePointer;
  readonly x: DevicePointer;
  /** [width] fp32 each. */
  readonly weight: DevicePointer;
  readonly bias: DevicePointer;
  readonly rows: number;
  readonly width: number;
  readonly eps: number;
}

/** LayerNorm per row over width, biased variance (rows.ts layerNorm). */
export function codecLayerNorm(cuda: CudaContext, a: CodecLayerNormArguments, options: LaunchOptions = {}): void {
  requireCount(a.rows, 'rows');
  requireCount(a.width, 'width', 1, 2 ** 24);
  if (!(Number.isFinite(a.eps) && a.eps > 0)) {
    throw new DramaError('KERNEL_ARGUMENT_INVALID', `eps must be a positive finite number, got ${a.eps}`, {
      kind: 'internal',
      param: 'eps',
    });
  }
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.x)
    .pointer(a.weight)
    .pointer(a.bias)
    .int32(a.width)
    .float32(a.eps);
  launch(cuda, LAYER_NORM_KERNEL, { grid: [a.rows, 1, 1], block: [LAYER_NORM_THREADS, 1, 1] }, args, options);
}

export interface CodecQuantizerTables {
  /** f32 [semanticSize, dim]. */
  readonly semanticEntries: DevicePointer;
  /** f32 [codebooks − 1, residualSize, dim]. */
  readonly residualEntries: DevicePointer;
  /** f32 [codebooks, latent, dim] (each codebook's out_proj weight [latent, dim, 1]). */
  readonly outWeights: DevicePointer;
  /** f32 [codebooks, latent]. */
  readonly outBiases: DevicePointer;
}

/** The quantizer's sizes, as its decode and encode kernels take them. */
export interface QuantizerGeometry {
  readonly latent: number;
  readonly codebookDim: number;
  /** Codebooks a frame: the semantic one, then the residual ones. */
  readonly codebooks: number;
  readonly semanticSize: number;
  readonly residualSize: number;
}

/** The quantizer kernels' limits on its sizes. */
export function requireQuantizerGeometry(a: QuantizerGeometry): void {
  requireCount(a.latent, 'latent');
  requireCount(a.codebookDim, 'codebookDim', 1, 4096);
  requireCount(a.codebooks, 'codebooks', 1, 64);
  requireCount(a.semanticSize, 'semanticSize');
  requireCount(a.residualSize, 'residualSize');
}

export interface CodecQuantizerDecodeArguments extends CodecQuantizerTables, QuantizerGeometry {
  /** f32 [frames, latent]. */
  readonly out: DevicePointer;
  /** int32 [frames, codebooks], code 0 semantic. */
  readonly codes: DevicePointer;
  readonly frames: number;
}

/**
 * Quantizer.decode: each code clamped to its codebook, each codebook's out_proj rounded to fp32, the residual ones
 * summed in order, then semantic + residual.
 */
export function codecQuantizerDecode(
  cuda: CudaContext,
  a: CodecQuantizerDecodeArguments,
  options: LaunchOptions = {},
): void {
  requireCount(a.frames, 'frames');
  requireQuantizerGeometry(a);
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.codes)
    .int32(a.frames)
    .int32(a.latent)
    .int32(a.codebookDim)
    .int32(a.codebooks)
    .int32(a.semanticSize)
    .int32(a.residualSize)
    .pointer(a.semanticEntries)
    .pointer(a.residualEntries)
    .pointer(a.outWeights)
    .pointer(a.outBiases);
  const grid = [Math.ceil(a.latent / QUANTIZER_THREADS), Math.min(MAXIMUM_GRID_Y, a.frames), 1] as const;
  launch(cuda, QUANTIZER_KERNEL, { grid, block: [QUANTIZER_THREADS, 1, 1] }, args, options);
}

/** One codebook as the checkpoint holds it: entries [size, dim], out_proj weight [latent, dim, 1] and bias [latent]. */
export interface QuantizerCodebook {
  readonly entries: Float32Array;
  readonly outWeight: Float32Array;
  readonly outBias: Float32Array;
}

function requireLength(values: Float32Array, length: number, name: string): void {
  if (values.length !== length) {
    throw new DramaError('TENSOR_SHAPE_MISMATCH', `${name} holds ${values.length} values, expected ${length}`, {
      kind: 'internal',
      param: name,
    });
  }
}

/** The semantic codebook and the residual ones (in order) → the kernel's stacked tables (host arrays to upload). */
export function quantizerTables(
  semantic: QuantizerCodebook,
  residual: readonly QuantizerCodebook[],
  shape: { latent: number; codebookDim: number; semanticSize: number; residualSize: number },
) {
  const { latent, codebookDim: dim, semanticSize, residualSize } = shape;
  const codebooks = [semantic, ...residual];
  const residualEntries = new Float32Array(residual.length * residualSize * dim);
  const outWeights = new Float32Array(codebooks.length * latent * dim);
  const outBiases = new Float32Array(codebooks.length * latent);
  requireLength(semantic.entries, semanticSize * dim, 'semantic codebook entries');
  codebooks.forEach((codebook, index) => {
    requireLength(codebook.outWeight, latent * dim, `codebook ${index} out_proj weight`);
    requireLength(codebook.outBias, latent, `codebook ${index} out_proj bias`);
    outWeights.set(codebook.outWeight, index * latent * dim);
    outBiases.set(codebook.outBias, index * latent);
    if (index === 0) return;
    requireLength(codebook.entries, residualSize * dim, `codebook ${index} entries`);
    residualEntries.set(codebook.entries, (index - 1) * residualSize * dim);
  });
  return { semanticEntries: Float32Array.from(semantic.entries), residualEntries, outWeights, outBiases };
}
