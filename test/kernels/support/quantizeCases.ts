// Contract case for the dynamic e4m3 activation quantisation (kernels/cuda/quantize_fp8.cu) against
// quantizeActivationsE4m3 (src/backend/cpu/ops/fp8.ts): the e4m3 bytes exactly equal (compared as packed int32
// words, four columns each, so every shape keeps rows × cols a multiple of 4) and the fp32 scales with zero error.
// Inputs span many binades so that subnormal e4m3 codes, exact halves and an all-zero block (the 1e-10 floor) occur.
import { quantizeActivationsE4m3 } from '../../../src/backend/cpu/ops/fp8.ts';
import { FP8_ACTIVATION_BLOCK, quantizeE4m3 } from '../../../src/backend/cuda/ops/quantizeFp8.ts';
import { bf16BitsToFloat32, float32ToBf16Bits, float32ToE4m3Bits } from '../../../src/numeric/dtypes.ts';
import type { InvarianceCase, KernelCase, Prepared, ShapeCase } from './contract.ts';
import { type Bf16Tensor, plant, Random } from './random.ts';

/** Normal values times 2^u, u uniform in [-24, 4): every e4m3 binade, subnormals included, relative to a block's amax. */
export function wideRangeBf16(random: Random, count: number): Bf16Tensor {
  const bits = new Uint16Array(count);
  const values = new Float64Array(count);
  for (let index = 0; index < count; index++) {
    bits[index] = float32ToBf16Bits(random.normal() * 2 ** (random.next() * 28 - 24));
    values[index] = bf16BitsToFloat32(bits[index]!);
  }
  return { bits, values };
}

/** The reference's e4m3 values as bytes (NaN as 0x7f, as the kernel writes it), packed four to an int32 word. */
export function packedBytes(quantized: Float64Array): Int32Array {
  const bytes = new Uint8Array(quantized.length);
  for (let index = 0; index < quantized.length; index++) {
    const value = quantized[index]!;
    bytes[index] = Number.isNaN(value) ? 0x7f : float32ToE4m3Bits(value);
  }
  return new Int32Array(bytes.buffer.slice(0));
}

function preparedQuantize(x: Bf16Tensor, rows: number, cols: number): Prepared {
  if ((rows * cols) % 4 !== 0) throw new Error(`quantize case needs rows × cols divisible by 4, got ${rows} × ${cols}`);
  const blocks = Math.ceil(cols / FP8_ACTIVATION_BLOCK);
  return {
    inputs: { x },
    outputs: [
      { name: 'q', kind: 'i32', count: (rows * cols) / 4 },
      { name: 'scales', kind: 'f32', count: rows * blocks },
    ],
    reference() {
      const quantized = new Float64Array(rows * cols);
      const scales = new Float64Array(rows * blocks);
      quantizeActivationsE4m3(x.values, rows, cols, quantized, scales);
      return { q: packedBytes(quantized), scales };
    },
    run(cuda, p, kernel) {
      quantizeE4m3(cuda, { q: p.q!, scales: p.scales!, x: p.x!, rows, cols }, { kernel });
    },
  };
}

function quantizeShape(label: string, rows: number, cols: number, zeroBlock: boolean): ShapeCase {
  return {
    label: `${label} [${rows}, ${cols}]`,
    prepare(random: Random, nonFinite: boolean) {
      const x = wideRangeBf16(random, rows * cols);
      if (zeroBlock) for (let column = 0; column < Math.min(cols, FP8_ACTIVATION_BLOCK); column++) plant(x, column, 0);
      if (nonFinite) {
        plant(x, zeroBlock ? cols - 1 : 0, Number.NaN);
        plant(x, Math.min(rows * cols - 1, cols + 5), Number.POSITIVE_INFINITY);
        plant(x, rows * cols - 2, Number.NEGATIVE_INFINITY);
      }
      return preparedQuantize(x, rows, cols);
    },
  };
}

function quantizeInvariance(cols: number): InvarianceCase {
  return {
    label: `expert input width ${cols}`,
    prepare(seed: number, rows: number) {
      return preparedQuantize(wideRangeBf16(new Random(seed), rows * cols), rows, cols);
    },
    elementsPerRow: { q: cols / 4, scales: Math.ceil(cols / FP8_ACTIVATION_BLOCK) },
  };
}

export const quantizeE4m3Case: KernelCase = {
  name: 'quantize e4m3 per 1×128 block',
  // Scales are one fp32 division, as the reference forms them: exactly equal.
  bound: 0,
  ulps: 0,
  shapes: [
    quantizeShape('one row, hidden', 1, 2048, false),
    quantizeShape('odd sizes, zero block', 37, 1000, true),
    quantizeShape('8 experts x 8 rows, expert width', 64, 512, false),
    quantizeShape('prefill chunk, hidden', 256, 2048, false),
    // h of an 8200-row call at top-8 holds more rows than one y grid (65535): the kernel walks the rest.
    quantizeShape('rows past one grid, one block', 65600, 128, false),
  ],
  invariance: [quantizeInvariance(2048)],
};
