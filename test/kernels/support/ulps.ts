// The contract's per-element gate: |actual − reference| in units of the output dtype's ulp (the spacing of bf16 or
// fp32 values at the reference's magnitude). Where the reference is smaller than `floor` (a fraction of the
// output's RMS) the ulp is taken at that floor: a result that cancels to near zero carries the absolute error of
// its terms, not one relative to itself.
import type { OutputKind } from './contract.ts';

const MANTISSA_BITS: Record<Exclude<OutputKind, 'i32'>, number> = { bf16: 7, f32: 23 };
const SMALLEST_NORMAL_EXPONENT = -126;

/** Default floor: 1/256 of the output's RMS, about one bf16 ulp of a typical element. */
export const DEFAULT_ULP_FLOOR = 2 ** -8;

/** The spacing of `kind` values at magnitude `magnitude` (subnormal spacing below the smallest normal). */
export function ulpAt(kind: Exclude<OutputKind, 'i32'>, magnitude: number): number {
  const bits = MANTISSA_BITS[kind];
  if (!(magnitude > 2 ** SMALLEST_NORMAL_EXPONENT)) return 2 ** (SMALLEST_NORMAL_EXPONENT - bits);
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
    else ulps = Math.abs(a - e) / ulpAt(kind, Math.max(Math.abs(e), floorMagnitude));
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
