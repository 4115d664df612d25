// Random but sane values for each weight-map role, chosen so that activations stay finite and the residual stream
// stays bounded over thousands of frames: linear weights have variance gain²/fan_in (uniform, like PyTorch's default
// init), projections that write into a residual stream are scaled by 1/sqrt(2·blocks) so that the sum of all writes
// keeps unit variance, zero-centred norm weights sit near 0 (applied as 1 + w), GDN decays are strictly below 1.

import type { TensorSpec } from '../../model/weights.ts';
import { E4M3_MAX, float32ToE4m3Bits } from '../dtypes.ts';
import { float32ToTensor, type HostTensor, makeTensor } from '../tensor.ts';
import { TensorStream } from './random.ts';

/** Spread of zero-centred norm weights around 0 and of the GDN output norm around 1. */
const NORM_DEVIATION = 0.02;
/** Spread of the GDN dt bias around 0 (softplus(0) ≈ 0.69: decays of a few steps to a few hundred). */
const DT_BIAS_DEVIATION = 0.1;
/** exp(A_log) ~ U(1, 16), as Qwen3-Next initialises it. */
const DECAY_RANGE: readonly [number, number] = [1, 16];
/** Embedding tables: unit variance rows (the frame row averages two of them with 1/sqrt(2)). */
const EMBEDDING_DEVIATION = 1;

const elements = (shape: readonly number[]) => shape.reduce((product, size) => product * size, 1);

/** Fan-in of a weight: the last dim for linear [out, in] and fused [E, out, in]; the kernel for depthwise conv. */
function fanIn(spec: TensorSpec): number {
  return spec.shape.at(-1)!;
}

/**
 * The float32 values of `spec` for `seed`. `residualGain` scales projections that write into a residual stream
 * (callers pass 1/sqrt(2·blocks) of the stack the tensor belongs to).
 */
export function initialValues(spec: TensorSpec, seed: number, residualGain: number): Float32Array {
  const stream = new TensorStream(seed, spec.name);
  const count = elements(spec.shape);
  switch (spec.role) {
    case 'token_embedding':
    case 'codebook_embedding':
      return stream.fillSpread(count, 0, EMBEDDING_DEVIATION);
    case 'norm':
      return stream.fillSpread(count, 0, NORM_DEVIATION);
    case 'gated_norm':
      return stream.fillSpread(count, 1, NORM_DEVIATION);
    case 'decay_log': {
      const decays = stream.fillUniform(count, DECAY_RANGE[0], DECAY_RANGE[1]);
      return decays.map(Math.log);
    }
    case 'dt_bias':
      return stream.fillSpread(count, 0, DT_BIAS_DEVIATION);
    case 'expert_scale':
      throw new Error(`${spec.name}: block scales come from their weight (quantizeFp8Blocks), not from a stream`);
    default: {
      // linear, router, conv, expert, output_head: variance gain²/fan_in.
      const gain = spec.writesResidual ? residualGain : 1;
      return stream.fillSpread(count, 0, gain / Math.sqrt(fanIn(spec)));
    }
  }
}

export const FP8_BLOCK = 128;

/**
 * Block-FP8 form of a [rows, cols] float32 matrix: per 128×128 block scale = amax/448 (1 for an all-zero block) and
 * e4m3 = round(value / scale), so that value ≈ e4m3 × scale (the `weight_scale_inv` convention).
 */
export function quantizeFp8Blocks(
  values: Float32Array,
  rows: number,
  cols: number,
): { weight: HostTensor; scale: HostTensor } {
  const blockRows = Math.ceil(rows / FP8_BLOCK);
  const blockCols = Math.ceil(cols / FP8_BLOCK);
  const scales = new Float32Array(blockRows * blockCols);
  for (let row = 0; row < rows; row++) {
    const scaleRow = Math.floor(row / FP8_BLOCK) * blockCols;
    for (let col = 0; col < cols; col++) {
      const slot = scaleRow + Math.floor(col / FP8_BLOCK);
      scales[slot] = Math.max(scales[slot]!, Math.abs(values[row * cols + col]!));
    }
  }
  for (let slot = 0; slot < scales.length; slot++) {
    // Stored in F32, so the division result is what the reader multiplies by.
    scales[slot] = scales[slot] === 0 ? 1 : Math.fround(scales[slot]! / E4M3_MAX);
  }
  const bytes = new Uint8Array(rows * cols);
  for (let row = 0; row < rows; row++) {
    const scaleRow = Math.floor(row / FP8_BLOCK) * blockCols;
    for (let col = 0; col < cols; col++) {
      const scale = scales[scaleRow + Math.floor(col / FP8_BLOCK)]!;
      bytes[row * cols + col] = float32ToE4m3Bits(values[row * cols + col]! / scale);
    }
  }
  return {
    weight: makeTensor('F8_E4M3', [rows, cols], bytes),
    scale: float32ToTensor(scales, 'F32', [blockRows, blockCols]),
  };
}
