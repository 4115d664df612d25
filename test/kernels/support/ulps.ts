// The contract's per-element gate: |actual − reference| in units of the output dtype's ulp (the spacing of bf16 or
// fp32 values at the reference's magnitude). Where the reference is smaller than `floor` (a fraction of the
// output's RMS) the ulp is taken at that floor: a result that cancels to near zero carries the absolute error of
// its terms, not one relative to itself. An output may also name, per element, a larger magnitude to count at
// (a rotation's outputs: their pair's norm, `rotatedPairMagnitudes`).
import type { RopeStyle } from '../../../src/backend/cpu/ops/rope.ts';
import { roundToBf16 } from '../../../src/numeric/dtypes.ts';
import type { OutputKind } from './contract.ts';

const MANTISSA_BITS: Record<Exclude<OutputKind, 'i32'>, number> = { bf16: 7, f32: 23, f64: 52 };
const SMALLEST_NORMAL_EXPONENT: Record<Exclude<OutputKind, 'i32'>, number> = { bf16: -126, f32: -126, f64: -1022 };

/** Default floor: 1/256 of the output's RMS, about one bf16 ulp of a typical element. */
export const DEFAULT_ULP_FLOOR = 2 ** -8;

/** The spacing of `kind` values at magnitude `magnitude` (subnormal spacing below the smallest normal). */
export function ulpAt(kind: Exclude<OutputKind, 'i32'>, magnitude: number): number {
  const bits = MANTISSA_BITS[kind];
  const smallest = SMALLEST_NORMAL_EXPONENT[kind];
  if (!(magnitude > 2 ** smallest)) return 2 ** (smallest - bits);
  let exponent = Math.floor(Math.log2(magnitude));
  // log2 may land one off next to a power of two.
  if (2 ** exponent > magnitude) exponent--;
  if (2 ** (exponent + 1) <= magnitude) exponent++;
  return 2 ** (exponent - bits);
}

export interface UlpComparison {
  /** The largest error in ulps over the elements (Infinity where one side is non-finite and the other is not). */
  readonly worst: number;
  /** How many elements exceed the bound. */
  readonly over: number;
  /** The first few elements over the bound: index, actual, expected, ulps. */
  readonly examples: readonly string[];
}

function rootMeanSquare(values: Float64Array): number {
  let sum = 0;
  let count = 0;
  for (const value of values) {
    if (!Number.isFinite(value)) continue;
    sum += value * value;
    count++;
  }
  return count > 0 ? Math.sqrt(sum / count) : 0;
}

export function compareUlps(
  name: string,
  kind: Exclude<OutputKind, 'i32'>,
  actual: Float64Array,
  expected: Float64Array,
  bound: number,
  floor = DEFAULT_ULP_FLOOR,
  magnitudes: ArrayLike<number> | undefined = undefined,
  limit = 5,
): UlpComparison {
  const floorMagnitude = floor * rootMeanSquare(expected);
  let worst = 0;
  let over = 0;
  const examples: string[] = [];
  for (let index = 0; index < expected.length; index++) {
    const a = actual[index]!;
    const e = expected[index]!;
    let ulps: number;
    if (Object.is(a, e) || (Number.isNaN(a) && Number.isNaN(e)) || a === e) ulps = 0;
    else if (!Number.isFinite(a) || !Number.isFinite(e)) ulps = Number.POSITIVE_INFINITY;
    else {
      const magnitude = Math.max(Math.abs(e), floorMagnitude, magnitudes?.[index] ?? 0);
      ulps = Math.abs(a - e) / ulpAt(kind, magnitude);
    }
    if (ulps > worst) worst = ulps;
    if (ulps > bound) {
      over++;
      if (examples.length < limit) {
        examples.push(`${name}[${index}] actual ${a} expected ${e} (${ulps.toFixed(2)} ulps, bound ${bound})`);
      }
    }
  }
  return { worst, over, examples };
}

/**
 * The magnitude to count each element of rotated heads ([..., headDim], RoPE on the first `rotaryDims`) at: a rotated
 * element's pair norm √(x₁² + x₂²), elsewhere 0 (its own size stands). A rotation passes its inputs' errors on at
 * their size (a 1-ulp flip of a normed x₁ moves x₁·cos − x₂·sin by ulp(x₁)·cos) and keeps the pair's norm, but where
 * the two terms cancel the output is far smaller than its inputs, so the output's own ulp would count that same error
 * many times over; at the pair's norm it counts as what it is, while a wrong angle or position, an error of the
 * pair's size, still reads as many ulps.
 */
export function rotatedPairMagnitudes(
  values: Float64Array,
  headDim: number,
  rotaryDims: number,
  style: RopeStyle,
): Float64Array {
  const magnitudes = new Float64Array(values.length);
  const half = rotaryDims / 2;
  for (let base = 0; base + headDim <= values.length; base += headDim) {
    for (let i = 0; i < half; i++) {
      const first = style === 'neox' ? base + i : base + 2 * i;
      const second = style === 'neox' ? base + i + half : base + 2 * i + 1;
      const a = values[first]!;
      const b = values[second]!;
      // bf16 values square without overflow or underflow in fp64, so no hypot is needed.
      const norm = Math.sqrt(a * a + b * b);
      if (!Number.isFinite(norm)) continue;
      magnitudes[first] = norm;
      magnitudes[second] = norm;
    }
  }
  return magnitudes;
}

/** The finite elements of an fp32 output that should hold bf16 values but do not: "index = value", the first few. */
export function offBf16Grid(name: string, values: Float64Array, limit = 5): { count: number; examples: string[] } {
  let count = 0;
  const examples: string[] = [];
  for (let index = 0; index < values.length; index++) {
    const value = values[index]!;
    if (!Number.isFinite(value) || roundToBf16(value) === value) continue;
    count++;
    if (examples.length < limit) examples.push(`${name}[${index}] = ${value}`);
  }
  return { count, examples };
}
