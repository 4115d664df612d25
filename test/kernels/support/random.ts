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
  const bits = new Uint16Array(values.length);
  const exact = new Float64Array(values.length);
  for (let index = 0; index < values.length; index++) {
    bits[index] = float32ToBf16Bits(values[index]!);
    exact[index] = bf16BitsToFloat32(bits[index]!);
  }
  return { bits, values: exact };
}

/** Normal values with the given scale (and offset), rounded to bf16. */
export function randomBf16(random: Random, count: number, scale = 1, offset = 0): Bf16Tensor {
  const values = new Float64Array(count);
  for (let index = 0; index < count; index++) values[index] = offset + scale * random.normal();
  return bf16FromValues(values);
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
