// Named scratch buffers that grow and are reused: the hot paths allocate nothing per row. A name must not be in use
// twice at once (each op family uses its own names).

import type { FloatArray } from './ops/types.ts';
import type { PrecisionPolicy } from './precision.ts';

export class ScratchPool {
  private readonly floats = new Map<string, FloatArray>();
  private readonly integers = new Map<string, Int32Array>();
  private readonly doubles = new Map<string, Float64Array>();

  constructor(private readonly policy: PrecisionPolicy) {}

  /** A buffer of exactly `count` elements (contents undefined). */
  floatsFor(name: string, count: number): FloatArray {
    let buffer = this.floats.get(name);
    if (buffer === undefined || buffer.length < count) {
      buffer = this.policy.allocate(Math.max(count, 2 * (buffer?.length ?? 0)));
      this.floats.set(name, buffer);
    }
    return buffer.subarray(0, count);
  }

  /** A Float64Array whatever the policy (for values kept in double, such as attention scores). */
  doublesFor(name: string, count: number): Float64Array {
    let buffer = this.doubles.get(name);
    if (buffer === undefined || buffer.length < count) {
      buffer = new Float64Array(Math.max(count, 2 * (buffer?.length ?? 0)));
      this.doubles.set(name, buffer);
    }
    return buffer.subarray(0, count);
  }

  integersFor(name: string, count: number): Int32Array {
    let buffer = this.integers.get(name);
    if (buffer === undefined || buffer.length < count) {
      buffer = new Int32Array(Math.max(count, 2 * (buffer?.length ?? 0)));
      this.integers.set(name, buffer);
    }
    return buffer.subarray(0, count);
  }
}
