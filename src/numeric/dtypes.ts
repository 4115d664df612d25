// Exact scalar conversions between float32 and the narrow float formats of the checkpoints, as bit patterns.
// Every narrowing rounds to nearest, ties to even, after first rounding the JS number to float32.
//   bf16  1 sign, 8 exponent (bias 127), 7 mantissa; Inf and NaN as float32 (NaN → 0x7fc0, as PyTorch).
//   f16   1 sign, 5 exponent (bias 15), 10 mantissa; subnormal step 2^-24, max 65504; NaN → sign | 0x7e00.
//   e4m3  float8_e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa, no Inf; max ±448, subnormal step 2^-9;
//         NaN is 0x7f / 0xff. Narrowing saturates: |x| > 448 and ±Inf give ±448 (the SATFINITE mode the GPU uses).
// These run per element in the cpu backend: one shared Float32Array/Uint32Array pair does the bit casts.

const floatScratch = new Float32Array(1);
const bitsScratch = new Uint32Array(floatScratch.buffer);

/** The float32 bit pattern of x (x is first rounded to float32). */
export function float32Bits(x: number): number {
  floatScratch[0] = x;
  return bitsScratch[0]!;
}

/** The float32 whose bit pattern is `bits`. */
export function float32FromBits(bits: number): number {
  bitsScratch[0] = bits;
  return floatScratch[0]!;
}

/** Rounds a non-negative double to the nearest integer, ties to even. */
function roundHalfEven(value: number): number {
  const floor = Math.floor(value);
  const fraction = value - floor;
  if (fraction > 0.5 || (fraction === 0.5 && floor % 2 === 1)) return floor + 1;
  return floor;
}

// ---- bf16 ----

export function float32ToBf16Bits(x: number): number {
  floatScratch[0] = x;
  return float32BitsToBf16Bits(bitsScratch[0]!);
}

/** float32ToBf16Bits of the float32 whose bits are `bits` (for callers that already hold float32 bits). */
export function float32BitsToBf16Bits(bits: number): number {
  if ((bits & 0x7fffffff) > 0x7f800000) return 0x7fc0;
  // Adding 0x7fff plus the lowest kept bit carries exactly when the dropped half is above (or at, when odd) the tie.
  return (bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16;
}

export function bf16BitsToFloat32(bits: number): number {
  bitsScratch[0] = (bits & 0xffff) << 16;
  return floatScratch[0]!;
}

export function roundToBf16(x: number): number {
  return bf16BitsToFloat32(float32ToBf16Bits(x));
}

/** Rounds every element to the nearest bf16 value, in place. */
export function roundArrayToBf16(values: Float32Array): void {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  for (let index = 0; index < bits.length; index++) {
    const word = bits[index]!;
    if ((word & 0x7fffffff) > 0x7f800000) bits[index] = 0x7fc00000;
    else bits[index] = (word + 0x7fff + ((word >>> 16) & 1)) & 0xffff0000;
  }
}

// ---- f16 ----

export function float32ToF16Bits(x: number): number {
  floatScratch[0] = x;
  const bits = bitsScratch[0]!;
  const sign = (bits >>> 16) & 0x8000;
  const magnitude = bits & 0x7fffffff;
  if (magnitude > 0x7f800000) return sign | 0x7e00;
  // 65520 = 0x477ff000 is the tie between 65504 (odd mantissa) and 65536: it and everything above become Inf.
  if (magnitude >= 0x477ff000) return sign | 0x7c00;
  if (magnitude >= 0x38800000) {
    // Normal: rebias the exponent (127 → 15) in place, then round away the 13 low mantissa bits.
    const rebiased = magnitude - ((127 - 15) << 23);
    return sign | ((rebiased + 0xfff + ((rebiased >>> 13) & 1)) >>> 13);
  }
  // Subnormal (or rounds up to the smallest normal, whose pattern 0x400 follows on): count steps of 2^-24.
  return sign | roundHalfEven(Math.abs(floatScratch[0]!) * 2 ** 24);
}

export function f16BitsToFloat32(bits: number): number {
  const exponent = (bits >>> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return (bits & 0x8000 ? -mantissa : mantissa) * 2 ** -24;
  // Normal, Inf and NaN map to float32 fields directly: rebias the exponent (15 → 127), widen the mantissa.
  const wideExponent = exponent === 0x1f ? 0xff : exponent + (127 - 15);
  bitsScratch[0] = ((bits & 0x8000) << 16) | (wideExponent << 23) | (mantissa << 13);
  return floatScratch[0]!;
}

export function roundToF16(x: number): number {
  return f16BitsToFloat32(float32ToF16Bits(x));
}

// ---- f8 e4m3fn ----

export const E4M3_MAX = 448;

export function float32ToE4m3Bits(x: number): number {
  floatScratch[0] = x;
  const bits = bitsScratch[0]!;
  const sign = (bits >>> 24) & 0x80;
  const magnitude = bits & 0x7fffffff;
  if (magnitude > 0x7f800000) return sign | 0x7f;
  // 448 = 0x43e00000; anything at or above it (Inf included) saturates to the largest finite pattern.
  if (magnitude >= 0x43e00000) return sign | 0x7e;
  if (magnitude >= 0x3c800000) {
    // Normal (≥ 2^-6): rebias the exponent (127 → 7), then round away the 20 low mantissa bits.
    const rebiased = magnitude - ((127 - 7) << 23);
    return sign | ((rebiased + 0x7ffff + ((rebiased >>> 20) & 1)) >>> 20);
  }
  // Subnormal (or rounds up to the smallest normal 0x08): count steps of 2^-9.
  return sign | roundHalfEven(Math.abs(floatScratch[0]!) * 2 ** 9);
}

export function e4m3BitsToFloat32(bits: number): number {
  const exponent = (bits >>> 3) & 0xf;
  const mantissa = bits & 0x7;
  if (exponent === 0) return (bits & 0x80 ? -mantissa : mantissa) * 2 ** -9;
  if (exponent === 0xf && mantissa === 0x7) return Number.NaN;
  // Normal: rebias the exponent (7 → 127) and widen the mantissa into float32 fields.
  bitsScratch[0] = ((bits & 0x80) << 24) | ((exponent + (127 - 7)) << 23) | (mantissa << 20);
  return floatScratch[0]!;
}

export function roundToE4m3(x: number): number {
  return e4m3BitsToFloat32(float32ToE4m3Bits(x));
}

let e4m3Table: Float32Array | undefined;

/** All 256 e4m3 values, indexed by bit pattern (built once). */
export function e4m3ValueTable(): Float32Array {
  if (e4m3Table === undefined) {
    e4m3Table = new Float32Array(256);
    for (let bits = 0; bits < 256; bits++) e4m3Table[bits] = e4m3BitsToFloat32(bits);
  }
  return e4m3Table;
}

let f16Table: Float32Array | undefined;

/** All 65536 f16 values, indexed by bit pattern (built once, 256 KiB). */
export function f16ValueTable(): Float32Array {
  if (f16Table === undefined) {
    f16Table = new Float32Array(65536);
    for (let bits = 0; bits < 65536; bits++) f16Table[bits] = f16BitsToFloat32(bits);
  }
  return f16Table;
}
