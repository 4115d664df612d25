// Planted faults that show the speech-model harnesses fail when they should, on the cpu backend: one attention
// layer's output negated (one row or all: a parity fault), a norm whose output depends on the call's row count (a
// chunking and batching fault; or on calls of more than 16 rows only), and a norm that flips a sign at random (a
// repeatability fault).
import { CpuBackend, type CpuBackendOptions } from '../../../src/backend/cpu/backend.ts';
import type { CpuBuffer } from '../../../src/backend/cpu/tensors.ts';
import type { AttentionWeights, CallTables, KeyValueSlab, Tensor } from '../../../src/backend/types.ts';

/** row-count: calls of more than one row; past-16-rows: calls of more than 16 (a fault of the wider buckets only). */
export type NormFault = 'none' | 'row-count' | 'past-16-rows' | 'random';

/** The fewest rows a call has for each row-count fault to act. */
const FAULT_FROM_ROWS: Partial<Record<NormFault, number>> = { 'row-count': 2, 'past-16-rows': 17 };

export class PlantedCpuBackend extends CpuBackend {
  /** The attention layer whose output rows `attentionRows` are negated (none until a test sets it). */
  attentionTarget: AttentionWeights<CpuBuffer> | undefined;
  attentionRows: number | 'all' = 'all';
  normFault: NormFault = 'none';

  constructor(options: CpuBackendOptions = {}) {
    super(options);
  }

  override attention(
    weights: AttentionWeights<CpuBuffer>,
    x: CpuBuffer,
    slab: KeyValueSlab<CpuBuffer>,
    tables: CallTables<CpuBuffer>,
    out: CpuBuffer,
    rows: number,
  ): void {
    super.attention(weights, x, slab, tables, out, rows);
    if (weights !== this.attentionTarget) return;
    const width = out.length / rows;
    const negate = (row: number) => {
      for (let column = 0; column < width; column++) out[row * width + column] = -out[row * width + column]!;
    };
    if (this.attentionRows === 'all') for (let row = 0; row < rows; row++) negate(row);
    else if (this.attentionRows < rows) negate(this.attentionRows);
  }

  override zeroCentredRmsNorm(
    x: CpuBuffer,
    weight: Tensor<CpuBuffer>,
    out: CpuBuffer,
    rows: number,
    cols: number,
    eps: number,
  ): void {
    super.zeroCentredRmsNorm(x, weight, out, rows, cols, eps);
    // Negating the first element of a row keeps it a bf16 value and changes what every later op reads.
    const flip = (row: number) => {
      out[row * cols] = -out[row * cols]!;
    };
    const faultFrom = FAULT_FROM_ROWS[this.normFault];
    if (faultFrom !== undefined && rows >= faultFrom) for (let row = 0; row < rows; row++) flip(row);
    if (this.normFault === 'random' && Math.random() < 0.5) flip(0);
  }
}
