// A counter-based generator: element i of a tensor is a pure function of (seed, tensor name, i), so any tensor can
// be generated alone, in any order, and the same seed always gives the same bytes. The mixer is the `lowbias32`
// integer hash (two multiply-xorshift rounds) applied to the counter offset by a key hashed from the seed and name.

export function mix32(value: number): number {
  value ^= value >>> 16;
  value = Math.imul(value, 0x21f0aaad);
  value ^= value >>> 15;
  value = Math.imul(value, 0x735a2d97);
  value ^= value >>> 15;
  return value >>> 0;
}

/** FNV-1a over the name's UTF-16 code units, then mixed with the seed. */
export function streamKey(seed: number, name: string): [number, number] {
  let hash = 0x811c9dc5;
  for (let index = 0; index < name.length; index++) {
    hash ^= name.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  const seedLow = seed >>> 0;
  const seedHigh = Math.floor(seed / 2 ** 32) >>> 0;
  return [mix32(hash ^ seedLow), mix32((hash + 0x9e3779b9) ^ seedHigh ^ 0x85ebca6b)];
}

/** Elements drawn per fillBits call by the fills that go through a scratch chunk. */
const CHUNK = 4096;
const chunkBits = new Uint32Array(CHUNK);

/** One tensor's stream of uniform values in (0, 1). */
export class TensorStream {
  private readonly keyLow: number;
  private readonly keyHigh: number;

  constructor(seed: number, name: string) {
    [this.keyLow, this.keyHigh] = streamKey(seed, name);
  }

  /** The 32 random bits of element `index`. */
  bits(index: number): number {
    return mix32(mix32((index ^ this.keyLow) >>> 0) ^ this.keyHigh);
  }

  /** Uniform in (0, 1), never exactly 0 or 1. */
  uniform(index: number): number {
    return (this.bits(index) + 0.5) / 4294967296;
  }

  /** The 32 random bits of elements `first`, `first` + 1, ... into `out` (mix32 inlined: the full preset draws 1.8e10). */
  fillBits(out: Uint32Array, first: number): Uint32Array {
    const keyLow = this.keyLow;
    const keyHigh = this.keyHigh;
    for (let offset = 0; offset < out.length; offset++) {
      let value = (first + offset) ^ keyLow;
      value ^= value >>> 16;
      value = Math.imul(value, 0x21f0aaad);
      value ^= value >>> 15;
      value = Math.imul(value, 0x735a2d97);
      value ^= value >>> 15;
      value ^= keyHigh;
      value ^= value >>> 16;
      value = Math.imul(value, 0x21f0aaad);
      value ^= value >>> 15;
      value = Math.imul(value, 0x735a2d97);
      value ^= value >>> 15;
      out[offset] = value;
    }
    return out;
  }

  /** `count` values uniform in [low, high). */
  fillUniform(count: number, low: number, high: number): Float32Array {
    const out = new Float32Array(count);
    this.fillUniformInto(out, 0, low, high);
    return out;
  }

  /** Elements `first`, `first` + 1, ... of fillUniform(·, low, high) into `out`, drawn a chunk of bits at a time. */
  fillUniformInto(out: Float32Array, first: number, low: number, high: number): Float32Array {
    const width = high - low;
    for (let start = 0; start < out.length; start += CHUNK) {
      const bits = this.fillBits(chunkBits.subarray(0, Math.min(CHUNK, out.length - start)), first + start);
      for (let offset = 0; offset < bits.length; offset++) {
        out[start + offset] = low + width * ((bits[offset]! + 0.5) / 4294967296);
      }
    }
    return out;
  }

  /** `count` values with mean `mean` and standard deviation `deviation`, uniformly distributed (±√3·deviation). */
  fillSpread(count: number, mean: number, deviation: number): Float32Array {
    const half = Math.sqrt(3) * deviation;
    return this.fillUniform(count, mean - half, mean + half);
  }
}
