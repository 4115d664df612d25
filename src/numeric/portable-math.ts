// exp and log in double precision built from IEEE-754 +, −, ×, ÷ (each correctly rounded) and exact power-of-two
// scaling only, so that kernels/cuda/portable_math.cuh, which performs the same operations in the same order with
// the _rn intrinsics (no fused multiply-add), gives bit-identical results. Math.exp and CUDA's exp() are each
// accurate to about an ulp but not to the same bits, and the sampler's picks must be equal on every backend.
// Accuracy: within a few ulps of the true value (test/numeric/portable-math.test.ts measures it).

const LOG2_E = Math.LOG2E;
/** ln 2 split so that k · LN2_HIGH is exact for |k| < 2^11. */
const LN2_HIGH = 0.6931471803691238;
const LN2_LOW = 1.9082149292705877e-10;
const SQRT_2 = Math.SQRT2;
const EXP_OVERFLOW = 709.782712893384;
const EXP_UNDERFLOW = -745.1332191019412;
/** Taylor terms of exp on |r| ≤ ln2/2: 1/n! for n = 0..13, each a correctly rounded quotient of exact integers. */
const EXP_TERMS = 13;
/** Terms of atanh: log(m) = 2s · Σ z^n / (2n + 1), z = s², |s| ≤ 0.1716. */
const LOG_TERMS = 11;

const scratch = new DataView(new ArrayBuffer(8));

/** 2^k as a double, for −1022 ≤ k ≤ 1023 (exact). */
function powerOfTwo(k: number): number {
  scratch.setUint32(0, ((k + 1023) << 20) >>> 0);
  scratch.setUint32(4, 0);
  return scratch.getFloat64(0);
}

function factorial(n: number): number {
  let value = 1;
  for (let i = 2; i <= n; i++) value *= i;
  return value;
}

export const expCoefficients = Float64Array.from({ length: EXP_TERMS + 1 }, (_, n) => 1 / factorial(n));
export const logCoefficients = Float64Array.from({ length: LOG_TERMS + 1 }, (_, n) => 1 / (2 * n + 1));

/** e^x, NaN for NaN, +Inf past overflow, 0 past underflow. */
export function portableExp(x: number): number {
  if (Number.isNaN(x)) return Number.NaN;
  if (x > EXP_OVERFLOW) return Number.POSITIVE_INFINITY;
  if (x < EXP_UNDERFLOW) return 0;
  const k = Math.floor(x * LOG2_E + 0.5);
  const r = x - k * LN2_HIGH - k * LN2_LOW;
  let polynomial = expCoefficients[EXP_TERMS]!;
  for (let n = EXP_TERMS - 1; n >= 0; n--) polynomial = polynomial * r + expCoefficients[n]!;
  // Two steps below 2^−1000 so that the scale itself stays a normal number; the last product rounds once.
  if (k < -1000) return polynomial * powerOfTwo(k + 1000) * powerOfTwo(-1000);
  if (k > 1023) return polynomial * powerOfTwo(1023) * powerOfTwo(k - 1023);
  return polynomial * powerOfTwo(k);
}

/** Natural log: NaN below 0 and for NaN, −Inf at 0, +Inf at +Inf. */
export function portableLog(x: number): number {
  if (Number.isNaN(x) || x < 0) return Number.NaN;
  if (x === 0) return Number.NEGATIVE_INFINITY;
  if (x === Number.POSITIVE_INFINITY) return x;
  let value = x;
  let exponentBias = 0;
  // Subnormals: scale into the normal range first (exact).
  if (value < 2.2250738585072014e-308) {
    value *= 18014398509481984; // 2^54
    exponentBias = -54;
  }
  scratch.setFloat64(0, value);
  const high = scratch.getUint32(0);
  let exponent = ((high >>> 20) & 0x7ff) - 1023 + exponentBias;
  scratch.setUint32(0, (high & 0x800fffff) | (1023 << 20));
  let mantissa = scratch.getFloat64(0);
  if (mantissa > SQRT_2) {
    mantissa *= 0.5;
    exponent += 1;
  }
  const f = mantissa - 1;
  const s = f / (2 + f);
  const z = s * s;
  let series = logCoefficients[LOG_TERMS]!;
  for (let n = LOG_TERMS - 1; n >= 0; n--) series = series * z + logCoefficients[n]!;
  const logMantissa = 2 * s * series;
  return exponent * LN2_HIGH + (exponent * LN2_LOW + logMantissa);
}
