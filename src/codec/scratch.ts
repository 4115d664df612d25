// Reusable scratch buffers for one decode/encode pass: slots are handed out in call order and reused on the next pass,
// so a streamed decode allocates only when a chunk is longer than any before. Poisoning fills every buffer handed
// out with NaN, so a test can prove that each op writes all of its output before anything reads it.

const allocateSingles = (size: number) => new Float32Array(size);
const allocateDoubles = (size: number) => new Float64Array(size);

export class ScratchArena {
  private readonly singles: Float32Array[] = [];
  private readonly doubles: Float64Array[] = [];
  private nextSingle = 0;
  private nextDouble = 0;

  constructor(private readonly poison = false) {}

  /** A float32 buffer of `length` values (contents undefined until written). */
  take(length: number): Float32Array {
    return this.slot(this.singles, this.nextSingle++, length, allocateSingles);
  }

  /** A float64 accumulator of `length` values (contents undefined until written). */
  takeDouble(length: number): Float64Array {
    return this.slot(this.doubles, this.nextDouble++, length, allocateDoubles);
  }

  /** Frees every slot for the next pass; buffers handed out before must no longer be used. */
  reset(): void {
    this.nextSingle = 0;
    this.nextDouble = 0;
  }

  /** Slot `slot` of `buffers`, grown by half when shorter than `length`, as a view of `length` values. */
  private slot<T extends Float32Array | Float64Array>(
    buffers: T[],
    slot: number,
    length: number,
    allocate: (size: number) => T,
  ): T {
    let buffer = buffers[slot];
    if (buffer === undefined || buffer.length < length) {
      buffer = allocate(Math.max(length, Math.ceil((buffer?.length ?? 0) * 1.5)));
      buffers[slot] = buffer;
    }
    const view = buffer.subarray(0, length) as T;
    if (this.poison) view.fill(Number.NaN);
    return view;
  }
}
