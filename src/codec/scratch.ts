// Reusable scratch buffers for one decode/encode pass: slots are handed out in call order and reused on the next pass,
// so a streamed decode allocates only when a chunk is longer than any before. Poisoning fills every buffer handed
// out with NaN, so a test can prove that each op writes all of its output before anything reads it.

export class ScratchArena {
  private readonly singles: Float32Array[] = [];
  private readonly doubles: Float64Array[] = [];
  private nextSingle = 0;
  private nextDouble = 0;

  constructor(private readonly poison = false) {}

  /** A float32 buffer of `length` values (contents undefined until written). */
  take(length: number): Float32Array {
    const slot = this.nextSingle++;
    let buffer = this.singles[slot];
    if (buffer === undefined || buffer.length < length) {
      buffer = new Float32Array(Math.max(length, Math.ceil((buffer?.length ?? 0) * 1.5)));
      this.singles[slot] = buffer;
    }
    const view = buffer.subarray(0, length);
    if (this.poison) view.fill(Number.NaN);
    return view;
  }

  /** A float64 accumulator of `length` values (contents undefined until written). */
  takeDouble(length: number): Float64Array {
    const slot = this.nextDouble++;
    let buffer = this.doubles[slot];
    if (buffer === undefined || buffer.length < length) {
      buffer = new Float64Array(Math.max(length, Math.ceil((buffer?.length ?? 0) * 1.5)));
      this.doubles[slot] = buffer;
    }
    const view = buffer.subarray(0, length);
    if (this.poison) view.fill(Number.NaN);
    return view;
  }

  /** Frees every slot for the next pass; buffers handed out before must no longer be used. */
  reset(): void {
    this.nextSingle = 0;
    this.nextDouble = 0;
  }
}
