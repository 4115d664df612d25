// Seeded random inputs for the kernel tests: a small counter-free generator (mulberry32), normal draws, and bf16
// arrays as raw bits with their exact values widened to fp64 for the references.
import { bf16BitsToFloat32, float32ToBf16Bits } from '../../../src/numeric/dtypes.ts';

export class Random {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let value = this.state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  }

  integer(below: number): number {
    return Math.floor(this.next() * below);
  }

  normal(): number {
    const u = 1 - this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }
}

/** A bf16 tensor as the device holds it (bits) and as the fp64 reference reads it (its exact values). */
export interface Bf16Tensor {
  readonly bits: Uint16Array;
  readonly values: Float64Array;
}

export function bf16FromValues(values: ArrayLike<number>): Bf16Tensor {
  // float32ToBf16Bits over whole arrays: one fp32 rounding, then round-to-nearest-even on the words (NaN → 0x7fc0).
  const words = new Uint32Array(Float32Array.from(values).buffer);
  const bits = new Uint16Array(words.length);
  const widened = new Uint32Array(words.length);
  for (let index = 0; index < words.length; index++) {
    const word = words[index]!;
    const rounded = (word & 0x7fffffff) > 0x7f800000 ? 0x7fc0 : (word + 0x7fff + ((word >>> 16) & 1)) >>> 16;
    bits[index] = rounded;
    widened[index] = rounded << 16;
  }
  return { bits, values: Float64Array.from(new Float32Array(widened.buffer)) };
}

/** Acklam's rational approximation of the standard normal quantile (relative error below 1.2e-9). */
function normalQuantile(p: number): number {
  const a = [
    -39.6968302866538, 220.946098424521, -275.928510446969, 138.357751867269, -30.6647980661472, 2.50662827745924,
  ];
  const b = [-54.4760987982241, 161.585836858041, -155.698979859887, 66.8013118877197, -13.2806815528857];
  const c = [
    -0.00778489400243029, -0.322396458041136, -2.40075827716184, -2.54973253934373, 4.37466414146497, 2.93816398269878,
  ];
  const d = [0.00778469570904146, 0.32246712907004, 2.445134137143, 3.75440866190742];
  const tail = (q: number) =>
    (((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) /
    ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1);
  if (p < 0.02425) return tail(Math.sqrt(-2 * Math.log(p)));
  if (p > 1 - 0.02425) return -tail(Math.sqrt(-2 * Math.log(1 - p)));
  const q = p - 0.5;
  const r = q * q;
  return (
    ((((((a[0]! * r + a[1]!) * r + a[2]!) * r + a[3]!) * r + a[4]!) * r + a[5]!) * q) /
    (((((b[0]! * r + b[1]!) * r + b[2]!) * r + b[3]!) * r + b[4]!) * r + 1)
  );
}

let quantiles: Float64Array | undefined;

/** Normal quantiles at (i + ½) / 65536: a normal draw from 16 random bits, two per uniform (tables of 16M values). */
function normalTable(): Float64Array {
  if (!quantiles) quantiles = Float64Array.from({ length: 65536 }, (_, index) => normalQuantile((index + 0.5) / 65536));
  return quantiles;
}

/** Normal values with the given scale (and offset) from the quantile table; element i depends only on draw ⌊i/2⌋. */
function normalValues<T extends Float64Array | Float32Array>(
  random: Random,
  values: T,
  scale: number,
  offset: number,
): T {
  const table = normalTable();
  const count = values.length;
  for (let index = 0; index < count; index += 2) {
    const word = random.next() * 4294967296;
    values[index] = offset + scale * table[word & 0xffff]!;
    if (index + 1 < count) values[index + 1] = offset + scale * table[word >>> 16]!;
  }
  return values;
}

/** Normal values with the given scale (and offset), rounded to bf16. */
export function randomBf16(random: Random, count: number, scale = 1, offset = 0): Bf16Tensor {
  return bf16FromValues(normalValues(random, new Float64Array(count), scale, offset));
}

/** Normal values with the given scale, rounded to fp32 (an fp32 state). */
export function randomFloat32(random: Random, count: number, scale = 1): Float32Array {
  return normalValues(random, new Float32Array(count), scale, 0);
}

/** Writes `value` (NaN, ±Infinity) into both views of a bf16 tensor at `index`. */
export function plant(tensor: Bf16Tensor, index: number, value: number): void {
  tensor.bits[index] = float32ToBf16Bits(value);
  tensor.values[index] = bf16BitsToFloat32(tensor.bits[index]!);
}

export function randomIntegers(random: Random, count: number, below: number): Int32Array {
  const result = new Int32Array(count);
  for (let index = 0; index < count; index++) result[index] = random.integer(below);
  return result;
}

export function freshSeed(): number {
  return (Math.random() * 2 ** 32) >>> 0;
}

/** Stream `index` of `seed`: each tensor of an invariance case draws from its own, so any prefix of rows repeats. */
export function streamOf(seed: number, index: number): Random {
  return new Random((seed + Math.imul(index + 1, 0x9e3779b9)) >>> 0);
}

const drawnForSeed = new Map<string, { seed: number; tensor: Bf16Tensor }>();

/** `draw()` once per key and seed: an invariance case's weights and tables, the same at every row count. */
export function drawnOnce(key: string, seed: number, draw: () => Bf16Tensor): Bf16Tensor {
  const known = drawnForSeed.get(key);
  if (known?.seed === seed) return known.tensor;
  const tensor = draw();
  drawnForSeed.set(key, { seed, tensor });
  return tensor;
}
