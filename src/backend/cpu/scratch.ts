// Named scratch buffers that grow and are reused: sized by the planning pass (the model's plan runs each bucket
// once), after which a step allocates nothing. Every growth is counted, so a test can assert that a step after plan
// made none. A name must not be in use twice at once (each op family uses its own names).

import type { FloatArray } from '../../numeric/float-array.ts';
import type { PrecisionPolicy } from './precision.ts';
import { type WideRow, wideRow } from './tensors.ts';
import type { WidenedCache } from './widened-cache.ts';

type ScratchBuffer = FloatArray | Float64Array | Int32Array;

export class ScratchPool {
  private readonly floats = new Map<string, FloatArray>();
  private readonly integers = new Map<string, Int32Array>();
  private readonly doubles = new Map<string, Float64Array>();
  private readonly rows = new Map<string, WideRow>();
  private readonly constants = new Map<string, Float64Array>();
  private readonly allocateFloats: (count: number) => FloatArray;
  /** Buffers created so far. */
  growths = 0;

  constructor(
    policy: PrecisionPolicy,
    /** The backend's widened weight matrices, which every linear call looks up. */
    readonly widened: WidenedCache,
  ) {
    this.allocateFloats = (count) => policy.allocate(count);
  }

  /** The buffer under `name`, grown (at least doubled) when shorter than `count`, viewed to `count` elements. */
  private reuse<T extends ScratchBuffer>(
    buffers: Map<string, T>,
    name: string,
    count: number,
    allocate: (count: number) => T,
  ): T {
    let buffer = buffers.get(name);
    if (buffer === undefined || buffer.length < count) {
      buffer = allocate(Math.max(count, 2 * (buffer?.length ?? 0)));
      buffers.set(name, buffer);
      this.growths += 1;
    }
    return buffer.subarray(0, count) as T;
  }

  /** A buffer of exactly `count` elements (contents undefined). */
  floatsFor(name: string, count: number): FloatArray {
    return this.reuse(this.floats, name, count, this.allocateFloats);
  }

  /** A Float64Array whatever the policy (for values kept in double, such as attention scores). */
  doublesFor(name: string, count: number): Float64Array {
    return this.reuse(this.doubles, name, count, (size) => new Float64Array(size));
  }

  integersFor(name: string, count: number): Int32Array {
    return this.reuse(this.integers, name, count, (size) => new Int32Array(size));
  }

  /** Values that depend only on `name` (such as RoPE frequencies), computed once. */
  constantsFor(name: string, compute: () => Float64Array): Float64Array {
    let values = this.constants.get(name);
    if (values === undefined) {
      values = compute();
      this.constants.set(name, values);
      this.growths += 1;
    }
    return values;
  }

  /** An fp32 row of at least `count` elements for widening weight bits. */
  rowFor(name: string, count: number): WideRow {
    let row = this.rows.get(name);
    if (row === undefined || row.floats.length < count) {
      row = wideRow(Math.max(count, 2 * (row?.floats.length ?? 0)));
      this.rows.set(name, row);
      this.growths += 1;
    }
    return row;
  }
}
