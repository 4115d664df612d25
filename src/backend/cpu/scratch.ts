// Named scratch buffers that grow and are reused: the hot paths allocate nothing per row. A name must not be in use
// twice at once (each op family uses its own names).

import type { FloatArray } from '../../numeric/float-array.ts';
import type { PrecisionPolicy } from './precision.ts';

type ScratchBuffer = FloatArray | Float64Array | Int32Array;

/** The buffer under `name` in `buffers`, grown (at least doubled) when shorter than `count`, as a view of `count`. */
function reuse<T extends ScratchBuffer>(
  buffers: Map<string, T>,
  name: string,
  count: number,
  allocate: (count: number) => T,
): T {
  let buffer = buffers.get(name);
  if (buffer === undefined || buffer.length < count) {
    buffer = allocate(Math.max(count, 2 * (buffer?.length ?? 0)));
    buffers.set(name, buffer);
  }
  return buffer.subarray(0, count) as T;
}

const allocateDoubles = (count: number) => new Float64Array(count);
const allocateIntegers = (count: number) => new Int32Array(count);

export class ScratchPool {
  private readonly floats = new Map<string, FloatArray>();
  private readonly integers = new Map<string, Int32Array>();
  private readonly doubles = new Map<string, Float64Array>();
  private readonly allocateFloats: (count: number) => FloatArray;

  constructor(policy: PrecisionPolicy) {
    this.allocateFloats = (count) => policy.allocate(count);
  }

  /** A buffer of exactly `count` elements (contents undefined). */
  floatsFor(name: string, count: number): FloatArray {
    return reuse(this.floats, name, count, this.allocateFloats);
  }

  /** A Float64Array whatever the policy (for values kept in double, such as attention scores). */
  doublesFor(name: string, count: number): Float64Array {
    return reuse(this.doubles, name, count, allocateDoubles);
  }

  integersFor(name: string, count: number): Int32Array {
    return reuse(this.integers, name, count, allocateIntegers);
  }
}
