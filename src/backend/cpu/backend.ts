// The cpu backend: the reference implementation of every Backend op over typed arrays, in one of three precision
// policies (precision.ts). Weights stay in their checkpoint bits and are widened per use (tensors.ts); activations,
// state and scratch are Float32Array (bf16, fp32) or Float64Array (fp64); tables and records are Int32Array.
import { DramaError } from '../../errors.ts';
import type { FloatArray } from '../../numeric/float-array.ts';
import { rmsNormZeroCentred } from '../../numeric/norms.ts';
import type {
  AttentionWeights,
  Backend,
  CallTables,
  DeltaNetSlab,
  DeltaNetWeights,
  DType,
  HostElements,
  KeyValueSlab,
  LinearWeight,
  MoeWeights,
  PendingIntegers,
  SamplerState,
  SwiGluWeights,
  Tensor,
  TowerInput,
  WeightStore,
} from '../types.ts';
import { LANE_ENTRY, LANE_SLOT } from '../types.ts';
import { runAttention } from './attention-block.ts';
import { type DeltaRuleForm, runDeltaNet } from './delta-net-block.ts';
import { runLinear } from './linear-layer.ts';
import { runMoe, runSwiGlu } from './moe-block.ts';
import { embedRecords, gatherCodeRows } from './ops/embedding.ts';
import { SUM_LANES } from './ops/sampling.ts';
import { type LinearSums, type PrecisionName, type PrecisionPolicy, precisionPolicy } from './precision.ts';
import { BatchSampler } from './sample-block.ts';
import { ScratchPool } from './scratch.ts';
import { type CpuBuffer, type CpuTensor, readFloats } from './tensors.ts';
import { CpuWeightStore } from './weight-store.ts';
import { DEFAULT_WIDENED_CACHE_BYTES, WidenedCache } from './widened-cache.ts';

export interface CpuBackendOptions {
  readonly precision?: PrecisionName;
  /** Linear layers' sums: exact (the default) or fp32 as a GPU's GEMM rounds them (the parity floor). */
  readonly linearSums?: LinearSums;
  /** The delta rule's form; recurrent (the default) makes every prefill chunking bit-identical. */
  readonly deltaRule?: DeltaRuleForm;
  /** Bytes of weight matrices widened to fp32 at load (widened-cache.ts); 0 widens every row per use. */
  readonly widenedCacheBytes?: number;
}

function elements(shape: readonly number[]): number {
  let count = 1;
  for (const size of shape) count *= size;
  return count;
}

/** Elements of one slot of a [S, …] tensor, and of one row (dimension 1) of a slot. */
function slotGeometry(tensor: CpuTensor): { slotWidth: number; rowWidth: number } {
  const slotWidth = elements(tensor.shape.slice(1));
  const rowWidth = tensor.shape.length > 2 ? elements(tensor.shape.slice(2)) : 1;
  return { slotWidth, rowWidth };
}

export class CpuBackend implements Backend<CpuBuffer> {
  readonly name = 'cpu';
  readonly queuesWork = false;
  readonly policy: PrecisionPolicy;
  readonly deltaRule: DeltaRuleForm;
  /** Widened copies of weight matrices, within a stated budget (never part of the weights' resident bytes). */
  readonly widened: WidenedCache;
  private readonly scratch: ScratchPool;
  private readonly sampler: BatchSampler;
  private allocated = 0;
  /** Storage `allocate` made and not yet released, and storage released (a later use or release is refused). */
  private readonly live = new WeakSet<CpuBuffer>();
  private readonly released = new WeakSet<CpuBuffer>();

  constructor(options: CpuBackendOptions = {}) {
    this.policy = precisionPolicy(options.precision ?? 'bf16', options.linearSums);
    this.deltaRule = options.deltaRule ?? 'recurrent';
    this.widened = new WidenedCache(options.widenedCacheBytes ?? DEFAULT_WIDENED_CACHE_BYTES);
    this.scratch = new ScratchPool(this.policy, this.widened);
    const words = new Uint32Array(4);
    const partials = new Float64Array(SUM_LANES);
    this.sampler = new BatchSampler((count) => ({
      probabilities: this.scratch.doublesFor('sample.probabilities', count),
      order: this.scratch.integersFor('sample.order', count),
      partials,
      words,
    }));
  }

  get allocations(): number {
    return this.allocated + this.scratch.growths;
  }

  allocate(dtype: DType, shape: readonly number[], outsideSteps = false): CpuTensor {
    if (!outsideSteps) this.allocated += 1;
    const count = elements(shape);
    const data = dtype === 'i32' ? new Int32Array(count) : this.policy.allocate(count);
    this.live.add(data);
    return { dtype, shape: [...shape], data };
  }

  /** Host storage goes with the garbage collector; what is tracked is that each tensor is released once, then unused. */
  release(tensors: readonly CpuTensor[]): void {
    for (const tensor of tensors) {
      if (!this.live.has(tensor.data)) {
        const reason = this.released.has(tensor.data) ? 'was released already' : 'was not made by allocate';
        const named = `${tensor.dtype} [${tensor.shape.join(', ')}]`;
        throw new DramaError('TENSOR_NOT_HELD', `cannot release a ${named}: it ${reason}`, { kind: 'internal' });
      }
      this.live.delete(tensor.data);
      this.released.add(tensor.data);
    }
  }

  fromHost(dtype: DType, shape: readonly number[], values: HostElements): CpuTensor {
    const count = elements(shape);
    if (values.length !== count) {
      throw new DramaError(
        'TENSOR_SIZE_MISMATCH',
        `[${shape.join(', ')}] holds ${count} elements, got ${values.length}`,
        {
          kind: 'internal',
        },
      );
    }
    const tensor = { dtype, shape: [...shape], data: values };
    this.widened.offer(tensor);
    return tensor;
  }

  weightStore(): WeightStore<CpuBuffer> {
    return new CpuWeightStore(this);
  }

  writeIntegers(target: CpuTensor, offset: number, values: Int32Array): void {
    (target.data as Int32Array).set(values, offset);
  }

  readIntegers(source: CpuTensor, offset: number, target: Int32Array): void {
    target.set((source.data as Int32Array).subarray(offset, offset + target.length));
  }

  queueIntegers(target: CpuTensor, offset: number, values: Int32Array): void {
    this.writeIntegers(target, offset, values);
  }

  /** The cpu has done the work already: the elements are copied now. */
  readIntegersLater(source: CpuTensor, offset: number, count: number): PendingIntegers {
    const values = (source.data as Int32Array).slice(offset, offset + count);
    let taken = false;
    return {
      wait: () => {
        if (taken)
          throw new DramaError('STAGED_READ_TAKEN', 'a pending read was waited for twice', { kind: 'internal' });
        taken = true;
        return values;
      },
    };
  }

  toHost(buffer: CpuBuffer, offset: number, count: number): Float64Array {
    return Float64Array.from(buffer.subarray(offset, offset + count));
  }

  view(buffer: CpuBuffer, offset: number, count: number): CpuBuffer {
    return buffer.subarray(offset, offset + count);
  }

  viewRows(tensor: CpuTensor, first: number, count: number): CpuTensor {
    const rowWidth = elements(tensor.shape.slice(1));
    const data = tensor.data.subarray(first * rowWidth, (first + count) * rowWidth);
    return { dtype: tensor.dtype, shape: [count, ...tensor.shape.slice(1)], data };
  }

  fillSlot(tensor: CpuTensor, slot: number, value: number): void {
    const { slotWidth } = slotGeometry(tensor);
    tensor.data.fill(value, slot * slotWidth, (slot + 1) * slotWidth);
  }

  copySlot(source: CpuTensor, fromSlot: number, target: CpuTensor, toSlot: number, rows: number): void {
    if (this.released.has(source.data) || this.released.has(target.data)) {
      throw new DramaError('TENSOR_RELEASED', 'a slot copy reads or writes a tensor that was released', {
        kind: 'internal',
      });
    }
    const from = slotGeometry(source);
    const to = slotGeometry(target);
    const count = rows * from.rowWidth;
    if (from.rowWidth !== to.rowWidth || count > from.slotWidth || count > to.slotWidth) {
      throw new DramaError('SLOT_COPY_MISMATCH', `cannot copy ${rows} rows between slots of different shapes`, {
        kind: 'internal',
      });
    }
    const start = fromSlot * from.slotWidth;
    (target.data as FloatArray).set((source.data as FloatArray).subarray(start, start + count), toSlot * to.slotWidth);
  }

  copy(source: CpuBuffer, target: CpuBuffer, count: number): void {
    if (source.constructor !== target.constructor || source.length < count || target.length < count) {
      throw new DramaError('COPY_MISMATCH', `cannot copy ${count} elements between these buffers`, {
        kind: 'internal',
      });
    }
    (target as FloatArray).set((source as FloatArray).subarray(0, count));
  }

  add(target: CpuBuffer, source: CpuBuffer, count: number): void {
    const out = target as FloatArray;
    for (let i = 0; i < count; i++) out[i] = out[i]! + source[i]!;
    this.policy.roundActivations(out, count);
  }

  concatenateColumns(a: CpuBuffer, aCols: number, b: CpuBuffer, bCols: number, out: CpuBuffer, rows: number): void {
    const width = aCols + bCols;
    const target = out as FloatArray;
    for (let t = 0; t < rows; t++) {
      target.set((a as FloatArray).subarray(t * aCols, (t + 1) * aCols), t * width);
      target.set((b as FloatArray).subarray(t * bCols, (t + 1) * bCols), t * width + aCols);
    }
  }

  embedRecords(
    tokenTable: CpuTensor,
    codeTable: CpuTensor,
    records: CpuTensor,
    codebook: number,
    codeFirstRow: number,
    out: CpuBuffer,
    rows: number,
  ): void {
    const cols = tokenTable.shape[1]!;
    const width = records.shape[1]!;
    const target = out as FloatArray;
    const scratch = { text: this.scratch.rowFor('embed.text', cols), code: this.scratch.rowFor('embed.code', cols) };
    const ids = records.data as Int32Array;
    embedRecords(tokenTable, codeTable, ids, width, codebook, codeFirstRow, target, rows, cols, scratch);
    // Frame rows are a sum (rounded where the GPU stores them); text rows are table rows, already exact.
    for (let t = 0; t < rows; t++)
      if (ids[t * width + 1]! >= 0) this.policy.roundActivations(target.subarray(t * cols), cols);
  }

  gatherCodes(
    codeTable: CpuTensor,
    records: CpuTensor,
    codebook: number,
    codeFirstRow: number,
    out: CpuBuffer,
    rows: number,
  ): void {
    const cols = codeTable.shape[1]!;
    const row = this.scratch.rowFor('gather.code', cols);
    const width = records.shape[1]!;
    gatherCodeRows(
      codeTable,
      records.data as Int32Array,
      width,
      codebook,
      codeFirstRow,
      out as FloatArray,
      rows,
      cols,
      row,
    );
  }

  gatherSlotRecords(slab: CpuTensor, lanes: CpuBuffer, out: CpuTensor, batch: number): void {
    const width = slab.shape[1]!;
    const source = slab.data as Int32Array;
    const target = out.data as Int32Array;
    for (let b = 0; b < batch; b++) {
      const slot = lanes[b * LANE_ENTRY + LANE_SLOT]!;
      target.set(source.subarray(slot * width, (slot + 1) * width), b * width);
    }
  }

  scatterSlotRecords(records: CpuTensor, lanes: CpuBuffer, slab: CpuTensor, batch: number): void {
    const width = slab.shape[1]!;
    const source = records.data as Int32Array;
    const target = slab.data as Int32Array;
    for (let b = 0; b < batch; b++) {
      const slot = lanes[b * LANE_ENTRY + LANE_SLOT]!;
      target.set(source.subarray(b * width, (b + 1) * width), slot * width);
    }
  }

  towerInput(a: TowerInput<CpuBuffer>, out: CpuBuffer, rows: number): void {
    const codeCols = a.codeTable.shape[1]!;
    const code = this.scratch.floatsFor('towerInput.code', rows * codeCols);
    const normedCode = this.scratch.floatsFor('towerInput.normedCode', rows * codeCols);
    const normedInput = this.scratch.floatsFor('towerInput.normedInput', rows * a.inputCols);
    this.gatherCodes(a.codeTable, a.records, a.codebook, a.codeFirstRow, code, rows);
    this.zeroCentredRmsNorm(code, a.codeNorm, normedCode, rows, codeCols, a.eps);
    this.zeroCentredRmsNorm(a.input, a.inputNorm, normedInput, rows, a.inputCols, a.eps);
    this.concatenateColumns(normedCode, codeCols, normedInput, a.inputCols, out, rows);
  }

  zeroCentredRmsNorm(x: CpuBuffer, weight: CpuTensor, out: CpuBuffer, rows: number, cols: number, eps: number): void {
    const widened = this.scratch.floatsFor('norm.weight', cols);
    readFloats(weight, 0, cols, widened, 0, this.scratch.rowFor('norm.row', cols));
    rmsNormZeroCentred(x as FloatArray, widened, out as FloatArray, rows, cols, eps);
    this.policy.roundActivations(out as FloatArray, rows * cols);
  }

  addZeroCentredRmsNorm(
    x: CpuBuffer,
    source: CpuBuffer,
    weight: CpuTensor,
    out: CpuBuffer,
    rows: number,
    cols: number,
    eps: number,
  ): void {
    this.add(x, source, rows * cols);
    this.zeroCentredRmsNorm(x, weight, out, rows, cols, eps);
  }

  linear(x: CpuBuffer, weight: LinearWeight<CpuBuffer>, out: CpuBuffer, rows: number, output?: 'bf16' | 'f32'): void {
    runLinear(this.policy, this.scratch, x as FloatArray, weight, out as FloatArray, rows, output);
  }

  attention(
    weights: AttentionWeights<CpuBuffer>,
    x: CpuBuffer,
    slab: KeyValueSlab<CpuBuffer>,
    tables: CallTables<CpuBuffer>,
    out: CpuBuffer,
    rows: number,
  ): void {
    runAttention(this.policy, this.scratch, weights, x as FloatArray, slab, tables, out as FloatArray, rows);
  }

  deltaNet(
    weights: DeltaNetWeights<CpuBuffer>,
    x: CpuBuffer,
    slab: DeltaNetSlab<CpuBuffer>,
    tables: CallTables<CpuBuffer>,
    out: CpuBuffer,
    rows: number,
  ): void {
    const { policy, scratch, deltaRule } = this;
    runDeltaNet(policy, scratch, deltaRule, weights, x as FloatArray, slab, tables, out as FloatArray, rows);
  }

  moe(weights: MoeWeights<CpuBuffer>, x: CpuBuffer, out: CpuBuffer, rows: number): void {
    runMoe(this.policy, this.scratch, weights, x as FloatArray, out as FloatArray, rows);
  }

  swiGlu(weights: SwiGluWeights<CpuBuffer>, x: CpuBuffer, out: CpuBuffer, rows: number): void {
    runSwiGlu(this.policy, this.scratch, weights, x as FloatArray, out as FloatArray, rows);
  }

  sampleMain(
    logits: CpuBuffer,
    count: number,
    semanticCount: number,
    candidates: Tensor<CpuBuffer>,
    state: SamplerState<CpuBuffer>,
    records: CpuTensor,
    batch: number,
  ): void {
    const ids = records.data as Int32Array;
    this.sampler.main(logits as FloatArray, count, semanticCount, candidates, state, ids, records.shape[1]!, batch);
  }

  sampleCode(
    logits: CpuBuffer,
    count: number,
    column: number,
    state: SamplerState<CpuBuffer>,
    records: CpuTensor,
    batch: number,
  ): void {
    const ids = records.data as Int32Array;
    this.sampler.code(logits as FloatArray, count, column, state, ids, records.shape[1]!, batch);
  }
}
