// Random but sane values for each weight-map role, chosen so that activations stay finite and the residual stream
// stays bounded over thousands of frames: linear weights have variance gain²/fan_in (uniform, like PyTorch's default
// init), projections that write into a residual stream are scaled by 1/sqrt(2·blocks) so that the sum of all writes
// keeps unit variance, zero-centred norm weights sit near 0 (applied as 1 + w), GDN decays are strictly below 1.
// FP8 experts are drawn on the e4m3 grid directly with one scale per 128×128 block.

import { type FloatDType, float32ToTensor, type HostTensor, makeTensor } from '../checkpoint/tensor.ts';
import type { Drama3Config } from '../model/config.ts';
import type { TensorPart, TensorSpec } from '../model/weights.ts';
import { E4M3_MAX, float32BitsToBf16Bits, float32ToE4m3Bits } from '../numeric/dtypes.ts';
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

/** Values drawn per fillUniformInto call by the bf16 fill, into one scratch chunk. */
const DRAW_CHUNK = 4096;
const valueScratch = new Float32Array(DRAW_CHUNK);
const valueBits = new Uint32Array(valueScratch.buffer);

/** Fan-in of a weight: the last dim for linear [out, in] and fused [E, out, in]; the kernel for depthwise conv. */
function fanIn(spec: TensorSpec): number {
  return spec.shape.at(-1)!;
}

/** Each stack's residual stream receives two writes per block; 1/sqrt(2·blocks) keeps their sum at unit variance. */
export function residualGains(config: Drama3Config): Record<TensorPart, number> {
  return { backbone: 1 / Math.sqrt(2 * config.text.layers), tower: 1 / Math.sqrt(2) };
}

/**
 * Mean and standard deviation of a tensor drawn uniformly (±√3·deviation): every role but the GDN decays (log of a
 * uniform) and the FP8 block scales (drawn with their weight). `residualGain` scales projections that write into a
 * residual stream (callers pass 1/sqrt(2·blocks) of the stack the tensor belongs to).
 */
export function uniformSpread(spec: TensorSpec, residualGain: number): { mean: number; deviation: number } | undefined {
  switch (spec.role) {
    case 'token_embedding':
    case 'codebook_embedding':
      return { mean: 0, deviation: EMBEDDING_DEVIATION };
    case 'norm':
      return { mean: 0, deviation: NORM_DEVIATION };
    case 'gated_norm':
      return { mean: 1, deviation: NORM_DEVIATION };
    case 'dt_bias':
      return { mean: 0, deviation: DT_BIAS_DEVIATION };
    case 'decay_log':
    case 'expert_scale':
      return undefined;
    default: {
      // linear, router, conv, expert, output_head: variance gain²/fan_in.
      const gain = spec.writesResidual ? residualGain : 1;
      return { mean: 0, deviation: gain / Math.sqrt(fanIn(spec)) };
    }
  }
}

/** The float32 values of `spec` for `seed` (`residualGain` as for uniformSpread). */
export function initialValues(spec: TensorSpec, seed: number, residualGain: number): Float32Array {
  const stream = new TensorStream(seed, spec.name);
  const count = elements(spec.shape);
  if (spec.role === 'decay_log') return stream.fillUniform(count, DECAY_RANGE[0], DECAY_RANGE[1]).map(Math.log);
  const spread = uniformSpread(spec, residualGain);
  if (spread === undefined) throw new Error(`${spec.name}: block scales come with their weight (initialFp8Weight)`);
  return stream.fillSpread(count, spread.mean, spread.deviation);
}

/** What one spec (not a block scale) draws: an FP8 weight with its block scales, or one tensor in the spec's dtype. */
export function initialTensors(
  spec: TensorSpec,
  seed: number,
  residualGain: number,
): { weight: HostTensor; scale?: HostTensor } {
  if (spec.dtype === 'F8_E4M3') return initialFp8Weight(spec, seed, residualGain);
  return { weight: initialTensor(spec, seed, residualGain) };
}

/** The tensor of a spec that is not an FP8 weight or its scales: initialValues in the spec's dtype. */
export function initialTensor(spec: TensorSpec, seed: number, residualGain: number): HostTensor {
  const spread = uniformSpread(spec, residualGain);
  if (spec.dtype !== 'BF16' || spread === undefined) {
    return float32ToTensor(initialValues(spec, seed, residualGain), spec.dtype as FloatDType, spec.shape);
  }
  return makeTensor('BF16', spec.shape, spreadBf16(new TensorStream(seed, spec.name), elements(spec.shape), spread));
}

/** fillSpread rounded to bf16 a chunk at a time, without the whole float32 array. */
function spreadBf16(stream: TensorStream, count: number, spread: { mean: number; deviation: number }): Uint8Array {
  const half = Math.sqrt(3) * spread.deviation;
  const out = new Uint16Array(count);
  for (let start = 0; start < count; start += DRAW_CHUNK) {
    const values = valueScratch.subarray(0, Math.min(DRAW_CHUNK, count - start));
    stream.fillUniformInto(values, start, spread.mean - half, spread.mean + half);
    for (let offset = 0; offset < values.length; offset++) {
      out[start + offset] = float32BitsToBf16Bits(valueBits[offset]!);
    }
  }
  return new Uint8Array(out.buffer);
}

const FP8_BLOCK = 128;
/** Per-block scale factors vary in this range so that a kernel reading the wrong block's scale shows it. */
export const BLOCK_SCALE_RANGE: readonly [number, number] = [0.75, 1.25];

let codeTable: Uint8Array | undefined;

/** e4m3 codes of 65536 evenly spaced values across (-448, 448): 16 random bits draw one uniform FP8 value. */
export function uniformCodeTable(): Uint8Array {
  if (codeTable !== undefined) return codeTable;
  codeTable = new Uint8Array(65536);
  for (let index = 0; index < 65536; index++) {
    codeTable[index] = float32ToE4m3Bits((((index + 0.5) / 65536) * 2 - 1) * E4M3_MAX);
  }
  return codeTable;
}

/** Half the width of the values an FP8 weight's codes stand for: ±√3 × its deviation gain/sqrt(fan_in). */
export function fp8HalfWidth(spec: TensorSpec, residualGain: number): number {
  const gain = spec.writesResidual ? residualGain : 1;
  return (Math.sqrt(3) * gain) / Math.sqrt(spec.shape.at(-1)!);
}

/**
 * A [rows, cols] FP8 expert weight drawn directly on the e4m3 grid (fast enough for the full preset's 32e9 values):
 * codes uniform over [-448, 448], one F32 scale per 128×128 block (the `weight_scale_inv` convention, value = code ×
 * scale). The block's largest code is 448, so scale = amax/448 as a quantiser would set it; the values have deviation
 * about gain/sqrt(fan_in) like the bf16 linear weights.
 */
export function initialFp8Weight(
  spec: TensorSpec,
  seed: number,
  residualGain: number,
): { weight: HostTensor; scale: HostTensor } {
  const [rows, cols] = spec.shape as [number, number];
  const halfWidth = fp8HalfWidth(spec, residualGain);
  const blockRows = Math.ceil(rows / FP8_BLOCK);
  const blockCols = Math.ceil(cols / FP8_BLOCK);
  const factors = new TensorStream(seed, `${spec.name}_scale_inv`).fillUniform(
    blockRows * blockCols,
    BLOCK_SCALE_RANGE[0],
    BLOCK_SCALE_RANGE[1],
  );
  const scales = factors.map((factor) => (halfWidth * factor) / E4M3_MAX);
  const table = uniformCodeTable();
  const stream = new TensorStream(seed, spec.name);
  const count = rows * cols;
  const bytes = new Uint8Array(count);
  // Each 32-bit draw gives two elements: its low and its high 16 bits.
  for (let pair = 0; 2 * pair < count; pair++) {
    const bits = stream.bits(pair);
    bytes[2 * pair] = table[bits & 0xffff]!;
    if (2 * pair + 1 < count) bytes[2 * pair + 1] = table[bits >>> 16]!;
  }
  return {
    weight: makeTensor('F8_E4M3', [rows, cols], bytes),
    scale: float32ToTensor(scales, 'F32', [blockRows, blockCols]),
  };
}
