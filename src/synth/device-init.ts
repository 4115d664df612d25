// How each weight-map tensor is drawn on the device so that it holds exactly the values `synth` writes (init.ts):
// the stream keys of its name, the uniform range of its role, and for FP8 weights the code table and the block
// scales' range. The reference functions compute one element the way kernels/cuda/synth_init.cu does (its CPU
// reference); tensors that need a logarithm (the GDN decays) or are tiny are drawn on the host by init.ts itself.
import type { ScaleFill, StreamKey, UniformFill } from '../backend/cuda/ops/synthInit.ts';
import type { TensorSpec } from '../model/weights.ts';
import { E4M3_MAX, float32ToBf16Bits } from '../numeric/dtypes.ts';
import { BLOCK_SCALE_RANGE, fp8HalfWidth, uniformSpread } from './init.ts';
import { mix32, streamKey } from './random.ts';

/** Tensors of at most this many elements are drawn on the host (norms, gates, decays): one upload each. */
export const HOST_DRAWN_ELEMENTS = 4096;

export type DeviceFill =
  | { readonly kind: 'host' }
  | ({ readonly kind: 'bf16' } & UniformFill)
  | {
      readonly kind: 'e4m3';
      readonly weight: StreamKey;
      readonly scales: ScaleFill;
    };

function key(seed: number, name: string): StreamKey {
  const [keyLow, keyHigh] = streamKey(seed, name);
  return { keyLow, keyHigh };
}

function elementCount(shape: readonly number[]): number {
  return shape.reduce((product, size) => product * size, 1);
}

/** How `spec` is drawn for `seed` (`residualGain` as synth passes it for the spec's stack). */
export function deviceFill(spec: TensorSpec, seed: number, residualGain: number): DeviceFill {
  if (spec.dtype === 'F8_E4M3') {
    const [low, high] = BLOCK_SCALE_RANGE;
    return {
      kind: 'e4m3',
      weight: key(seed, spec.name),
      scales: {
        ...key(seed, `${spec.name}_scale_inv`),
        low,
        width: high - low,
        halfWidth: fp8HalfWidth(spec, residualGain),
        divisor: E4M3_MAX,
      },
    };
  }
  const spread = uniformSpread(spec, residualGain);
  if (spread === undefined || spec.dtype !== 'BF16' || elementCount(spec.shape) <= HOST_DRAWN_ELEMENTS) {
    return { kind: 'host' };
  }
  // The same doubles as TensorStream.fillSpread: half = √3·deviation, [mean − half, mean + half).
  const half = Math.sqrt(3) * spread.deviation;
  const low = spread.mean - half;
  return { kind: 'bf16', ...key(seed, spec.name), low, width: spread.mean + half - low };
}

/** The kernel's bits(i). */
export function streamBits(stream: StreamKey, index: number): number {
  return mix32(mix32((index ^ stream.keyLow) >>> 0) ^ stream.keyHigh);
}

function uniformValue(fill: UniformFill, index: number): number {
  return Math.fround(fill.low + fill.width * ((streamBits(fill, index) + 0.5) / 4294967296));
}

/** synth_fill_bf16's element `index` of the tensor: bf16 bits. */
export function referenceBf16(fill: UniformFill, index: number): number {
  return float32ToBf16Bits(uniformValue(fill, index));
}

/** synth_fill_e4m3's byte `index`: pair index >> 1 of the stream, its low or high 16 bits through the code table. */
export function referenceE4m3(stream: StreamKey, index: number, table: Uint8Array): number {
  const bits = streamBits(stream, Math.floor(index / 2));
  return table[index % 2 === 0 ? bits & 0xffff : bits >>> 16]!;
}

/** synth_fill_block_scales's element `index`. */
export function referenceBlockScale(fill: ScaleFill, index: number): number {
  return Math.fround((fill.halfWidth * uniformValue(fill, index)) / fill.divisor);
}
