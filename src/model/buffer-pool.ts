// Named backend buffers that grow and are reused across calls: the model's plan runs each bucket once so that they
// reach their size, after which a step allocates nothing (every growth goes through backend.allocate and is counted).
import type { Backend } from '../backend/types.ts';

export class BufferPool<B> {
  private readonly buffers = new Map<string, { buffer: B; capacity: number }>();

  constructor(private readonly backend: Backend<B>) {}

  /** A buffer of at least `count` elements (contents undefined), viewed to exactly `count`: bf16 activations, or
   *  f32 for logits. */
  get(name: string, count: number, dtype: 'bf16' | 'f32' = 'bf16'): B {
    let entry = this.buffers.get(name);
    if (entry === undefined || entry.capacity < count) {
      const capacity = Math.max(count, 2 * (entry?.capacity ?? 0));
      entry = { buffer: this.backend.allocate(dtype, [capacity]).data, capacity };
      this.buffers.set(name, entry);
    }
    return this.backend.view(entry.buffer, 0, count);
  }
}
