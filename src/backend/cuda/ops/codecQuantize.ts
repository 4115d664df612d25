// Launcher for kernels/cuda/codec_quantize.cu (its header has the formulas and layouts): the codec quantizer's encode,
// latent rows → codes and distance margins, as the cpu Quantizer.encode computes them. One block per frame, so a
// frame's codes do not depend on the frames beside it. The kernel's tables are stacked once at load by
// quantizerEncodeTables below.
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type QuantizerGeometry, requireQuantizerGeometry } from './codecRows.ts';
import { type KernelName, type LaunchOptions, launch, requireCount } from './launch.ts';

const ENCODE_KERNEL: KernelName = { family: 'codec_quantize', name: 'codec_quantizer_encode' };

/** The kernel's fixed block (codec_quantize.cuh). */
const ENCODE_THREADS = 256;
const MAXIMUM_GRID_X = 2 ** 31 - 1;
/** Shared floats beside the residual row: the encoded, normalised and straight-through vectors. */
const VECTORS = 3;
/** The residual row and the vectors (40 KiB) beside the kernel's 6 KiB of merge scratch stay within 48 KiB. */
const MAXIMUM_SHARED_FLOATS = 10240;

export interface CodecQuantizerEncodeTables {
  /** f32 [K, dim, latent] (each codebook's in_proj weight [dim, latent, 1]). */
  readonly inWeights: DevicePointer;
  /** f32 [K, dim]. */
  readonly inBiases: DevicePointer;
  /** f32 [S + (K − 1)·R, dim]: the semantic entries, then each residual codebook's. */
  readonly entries: DevicePointer;
  /** f32 [S + (K − 1)·R, dim]: the entries divided by their norms (Quantizer's search table). */
  readonly normalised: DevicePointer;
  /** f64 [S + (K − 1)·R]: the normalised entries' squared norms. */
  readonly squares: DevicePointer;
  /** f32 [K, latent, dim]. */
  readonly outWeights: DevicePointer;
  /** f32 [K, latent]. */
  readonly outBiases: DevicePointer;
}

export interface CodecQuantizerEncodeArguments extends CodecQuantizerEncodeTables, QuantizerGeometry {
  /** int32 [frames, K], code 0 semantic. */
  readonly codes: DevicePointer;
  /** f64 [frames, K]: second-nearest distance − nearest distance. */
  readonly margins: DevicePointer;
  /** f32 [frames, latent]. */
  readonly z: DevicePointer;
  readonly frames: number;
}

/** Quantizer.encode of every frame: each codebook's nearest entry and margin, and the residual carried on. */
export function codecQuantizerEncode(
  cuda: CudaContext,
  a: CodecQuantizerEncodeArguments,
  options: LaunchOptions = {},
): void {
  requireCount(a.frames, 'frames', 1, MAXIMUM_GRID_X);
  requireQuantizerGeometry(a);
  requireCount(a.latent + VECTORS * a.codebookDim, 'latent + 3 × codebookDim', 1, MAXIMUM_SHARED_FLOATS);
  const args = new KernelArguments()
    .pointer(a.codes)
    .pointer(a.margins)
    .pointer(a.z)
    .int32(a.frames)
    .int32(a.latent)
    .int32(a.codebookDim)
    .int32(a.codebooks)
    .int32(a.semanticSize)
    .int32(a.residualSize)
    .pointer(a.inWeights)
    .pointer(a.inBiases)
    .pointer(a.entries)
    .pointer(a.normalised)
    .pointer(a.squares)
    .pointer(a.outWeights)
    .pointer(a.outBiases);
  const shape = {
    grid: [a.frames, 1, 1] as const,
    block: [ENCODE_THREADS, 1, 1] as const,
    sharedBytes: (a.latent + VECTORS * a.codebookDim) * 4,
  };
  launch(cuda, ENCODE_KERNEL, shape, args, options);
}

/** One codebook as the checkpoint holds it (folded): entries [size, dim], in_proj [dim, latent], out_proj [latent, dim]. */
export interface EncodeCodebook {
  readonly entries: Float32Array;
  /** Quantizer's search table of these entries (normalisedEntries in src/codec/quantizer.ts). */
  readonly normalised: Float32Array;
  readonly squares: Float64Array;
  readonly inWeight: Float32Array;
  readonly inBias: Float32Array;
  readonly outWeight: Float32Array;
  readonly outBias: Float32Array;
}

function requireLength(values: ArrayLike<number>, length: number, name: string): void {
  if (values.length !== length) {
    throw new DramaError('TENSOR_SHAPE_MISMATCH', `${name} holds ${values.length} values, expected ${length}`, {
      kind: 'internal',
      param: name,
    });
  }
}

function stack<T extends Float32Array | Float64Array>(parts: readonly T[], make: (length: number) => T): T {
  const out = make(parts.reduce((total, part) => total + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** The semantic codebook then the residual ones → the kernel's stacked tables (host arrays to upload). */
export function quantizerEncodeTables(
  codebooks: readonly EncodeCodebook[],
  shape: { latent: number; codebookDim: number; semanticSize: number; residualSize: number },
) {
  const { latent, codebookDim: dim, semanticSize, residualSize } = shape;
  codebooks.forEach((codebook, index) => {
    const size = index === 0 ? semanticSize : residualSize;
    requireLength(codebook.entries, size * dim, `codebook ${index} entries`);
    requireLength(codebook.normalised, size * dim, `codebook ${index} normalised entries`);
    requireLength(codebook.squares, size, `codebook ${index} squared norms`);
    requireLength(codebook.inWeight, dim * latent, `codebook ${index} in_proj weight`);
    requireLength(codebook.inBias, dim, `codebook ${index} in_proj bias`);
    requireLength(codebook.outWeight, latent * dim, `codebook ${index} out_proj weight`);
    requireLength(codebook.outBias, latent, `codebook ${index} out_proj bias`);
  });
  const floats = (length: number) => new Float32Array(length);
  const pick = (key: 'entries' | 'normalised' | 'inWeight' | 'inBias' | 'outWeight' | 'outBias') =>
    stack(
      codebooks.map((codebook) => codebook[key]),
      floats,
    );
  return {
    inWeights: pick('inWeight'),
    inBiases: pick('inBias'),
    entries: pick('entries'),
    normalised: pick('normalised'),
    squares: stack(
      codebooks.map((codebook) => codebook.squares),
      (length) => new Float64Array(length),
    ),
    outWeights: pick('outWeight'),
    outBiases: pick('outBias'),
  };
}
