// Widened copies of weight matrices, within a stated byte budget: the cpu backend keeps every weight in its stored
// dtype, and widens each [out, in] matrix at load into fp32 values (exact: bf16, f16 and e4m3 values are all fp32
// values) while the budget lasts, so that a linear call does not widen the same rows again every frame. Matrices loaded
// after the budget is spent are widened one row at a time per call; the results are the same bits either way.
import type { CpuTensor } from './tensors.ts';
import { widenToRow, wideRow } from './tensors.ts';

/** Default budget: enough for every matrix of the tiny checkpoint except its token embedding table. */
export const DEFAULT_WIDENED_CACHE_BYTES = 16 * 1024 * 1024;

export class WidenedCache {
  /** Keyed by the stored elements, which a tensor shares with its copies (such as one given its scales). */
  private readonly copies = new WeakMap<object, Float32Array>();
  /** Bytes of widened copies held. */
  bytes = 0;

  constructor(readonly capacityBytes: number) {}

  /** Widens a bf16/f16/e4m3 matrix now if it fits in what is left of the budget. */
  offer(tensor: CpuTensor): void {
    if (tensor.shape.length !== 2 || tensor.dtype === 'f32' || tensor.dtype === 'i32') return;
    const [rows, cols] = tensor.shape as [number, number];
    const size = rows * cols * 4;
    if (this.bytes + size > this.capacityBytes) return;
    const values = new Float32Array(rows * cols);
    const row = wideRow(cols);
    for (let r = 0; r < rows; r++) values.set(widenToRow(tensor, r * cols, cols, row).subarray(0, cols), r * cols);
    this.copies.set(tensor.data, values);
    this.bytes += size;
  }

  /** The widened values of a matrix, or undefined when it was not cached. */
  get(tensor: CpuTensor): Float32Array | undefined {
    return this.copies.get(tensor.data);
  }
}
