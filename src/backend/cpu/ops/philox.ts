// Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): a counter-based generator, so a
// draw depends only on (key, counter) — the same on every backend, batch and chunking. Words are uint32 numbers.
const MULTIPLIER_0 = 0xd2511f53;
const MULTIPLIER_1 = 0xcd9e8d57;
const WEYL_0 = 0x9e3779b9;
const WEYL_1 = 0xbb67ae85;

/** High 32 bits of the 64-bit product of two uint32 values. */
function multiplyHigh(a: number, b: number): number {
  const aLow = a & 0xffff;
  const aHigh = a >>> 16;
  const bLow = b & 0xffff;
  const bHigh = b >>> 16;
  const lowLow = aLow * bLow;
  const middle1 = aHigh * bLow + (lowLow >>> 16);
  const middle2 = aLow * bHigh + (middle1 & 0xffff);
  return (aHigh * bHigh + Math.floor(middle1 / 0x10000) + Math.floor(middle2 / 0x10000)) >>> 0;
}

/** Ten Philox rounds of counter (c0..c3) under key (k0, k1); writes the four output words into `out`. */
export function philox4x32(
  c0: number,
  c1: number,
  c2: number,
  c3: number,
  k0: number,
  k1: number,
  out: Uint32Array,
): void {
  let x0 = c0 >>> 0;
  let x1 = c1 >>> 0;
  let x2 = c2 >>> 0;
  let x3 = c3 >>> 0;
  let key0 = k0 >>> 0;
  let key1 = k1 >>> 0;
  for (let round = 0; round < 10; round++) {
    const high0 = multiplyHigh(MULTIPLIER_0, x0);
    const low0 = Math.imul(MULTIPLIER_0, x0) >>> 0;
    const high1 = multiplyHigh(MULTIPLIER_1, x2);
    const low1 = Math.imul(MULTIPLIER_1, x2) >>> 0;
    x0 = (high1 ^ x1 ^ key0) >>> 0;
    x1 = low1;
    x2 = (high0 ^ x3 ^ key1) >>> 0;
    x3 = low0;
    key0 = (key0 + WEYL_0) >>> 0;
    key1 = (key1 + WEYL_1) >>> 0;
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
}
