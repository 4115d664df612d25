// Named device scratch that grows to what the largest call needs and is reused afterwards: plan runs every shape
// once, so that a step after it allocates nothing (each growth is counted in the backend's allocations). Each
// buffer is zeroed when allocated (GEMM split counters rely on it) and 256-byte aligned, as the driver hands it out.
import type { DType } from '../types.ts';
import type { CudaContext } from './context.ts';
import type { DevicePointer } from './driver.ts';
import type { Allocation } from './memory.ts';
import { type CudaBuffer, elementBytes } from './tensors.ts';

export class DeviceScratch {
  private readonly buffers = new Map<string, Allocation>();
  /** Allocations made so far (growths included). */
  growths = 0;
  /** Put before every name while within() runs: work that runs beside other work gets buffers of its own. */
  private prefix = '';

  constructor(private readonly cuda: CudaContext) {}

  /** Runs `work` with its own buffers: every name it asks for is `prefix` + name. */
  within(prefix: string, work: () => void): void {
    const outer = this.prefix;
    this.prefix = outer + prefix;
    try {
      work();
    } finally {
      this.prefix = outer;
    }
  }

  /** At least `bytes` bytes under `name` (contents left by the previous user of the name). */
  bytes(unprefixed: string, bytes: number): DevicePointer {
    const name = this.prefix + unprefixed;
    const held = this.buffers.get(name);
    if (held !== undefined && held.bytes >= bytes) return held.pointer;
    // Growth waits for queued work that may still read the old buffer, then frees it.
    if (held !== undefined) {
      this.cuda.synchronize();
      held.free();
    }
    const size = Math.max(bytes, 2 * (held?.bytes ?? 0), 256);
    const allocation = this.cuda.allocate(size, `scratch ${name}`);
    this.cuda.driver.fillBytes(allocation.pointer, 0, size, this.cuda.stream);
    this.buffers.set(name, allocation);
    this.growths += 1;
    return allocation.pointer;
  }

  /** A buffer of `count` elements of `dtype` under `name`. */
  buffer(name: string, dtype: DType, count: number): CudaBuffer {
    return { pointer: this.bytes(name, Math.max(count, 1) * elementBytes(dtype)), dtype, elements: count };
  }

  /** Bytes held by every scratch buffer. */
  get heldBytes(): number {
    let total = 0;
    for (const allocation of this.buffers.values()) total += allocation.bytes;
    return total;
  }

  release(): void {
    for (const allocation of this.buffers.values()) allocation.free();
    this.buffers.clear();
  }
}
