// The cuda backend: every Backend op on one device stream, from the kernels in kernels/cuda with their launchers in
// ops/. Rounding points are the cpu backend's bf16 mode (cpu/precision.ts): each op rounds once to bf16 where it
// stores an activation; linear keeps fp32 only for an f32 output buffer. Attention, Gated DeltaNet, MoE and SwiGLU
// are block modules sharing a BlockContext (the scratch, this linear, prepared weights). No op reads back or
// synchronises, so a frame step can be recorded as one graph (captureStep); allocation belongs to load and plan.
import { DramaError } from '../../errors.ts';
import { float32Bits, float32ToBf16Bits } from '../../numeric/dtypes.ts';
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
  StepGraphStats,
  SwiGluWeights,
  TowerInput,
} from '../types.ts';
import { LANE_ENTRY } from '../types.ts';
import { runAttention } from './attention-block.ts';
import type { BlockContext } from './block-context.ts';
import { CudaContext, type CudaContextOptions } from './context.ts';
import { runDeltaNet } from './delta-net-block.ts';
import { fusedLinear, fusedLinearCombinedBy } from './fused-linear.ts';
import { decodeElements, hostArrayFor, requireHostArray } from './host-elements.ts';
import type { Allocation } from './memory.ts';
import { runMoe } from './moe-block.ts';
import { gemm, gemmWorkspaceBytes } from './ops/gemm.ts';
import {
  addInPlace,
  concatenateColumns,
  embedRecords,
  fillHalfWords,
  gatherCodes,
  moveSlotRecords,
} from './ops/records.ts';
import { addRmsNorm, type NormWeightDtype, rmsNorm, towerInput } from './ops/rmsNorm.ts';
import { sampleCode, sampleMain } from './ops/sampler.ts';
import { DeviceScratch } from './scratch.ts';
import { LARGEST_STAGED_BYTES, StagingRing } from './staging-ring.ts';
import { StepGraphs } from './step-graphs.ts';
import { runSwiGlu } from './swiglu-block.ts';
import { type CudaBuffer, type CudaTensor, elementBytes, requireDtype, shapeElements, viewBuffer } from './tensors.ts';
import { CudaWeightStore } from './weight-store.ts';

/** The linear workspace is sized for at most this many rows: every split-K launch (≤ 64 rows) fits it. */
const SPLIT_ROWS = 64;
/** Scratch name of the GEMM's split-K partials (shared by every linear: they run one after another). */
export const LINEAR_WORKSPACE = 'linear.workspace';
/** The largest step whose tail runs a priority below its head (where the context's priority leaves one below). */
export const TAIL_BELOW_MOST_ROWS = 16;

function invalid(code: string, message: string): DramaError {
  return new DramaError(code, message, { kind: 'internal' });
}

/** A norm weight's dtype (bf16 or f32, the kernels read either as stored), refused otherwise or when short. */
function normWeightDtype(weight: CudaTensor, cols: number, name: string): NormWeightDtype {
  if (weight.dtype !== 'bf16' && weight.dtype !== 'f32') {
    throw invalid('NORM_WEIGHT_DTYPE_UNSUPPORTED', `norm weights must be bf16 or f32, got ${weight.dtype}`);
  }
  requireElements(weight.data, cols, name);
  return weight.dtype;
}

/** Refuses a buffer shorter than an op's extent. */
function requireElements(buffer: CudaBuffer, count: number, name: string): void {
  if (buffer.elements < count) {
    throw invalid('TENSOR_TOO_SMALL', `${name} holds ${buffer.elements} elements, the op needs ${count}`);
  }
}

function requireShape(shape: readonly number[]): void {
  if (!shape.every((size) => Number.isInteger(size) && size >= 0)) {
    throw invalid('TENSOR_SHAPE_INVALID', `shape [${shape.join(', ')}] must hold non-negative integers`);
  }
}

/** Elements of one slot of a [S, …] tensor, and of one row (dimension 1) of a slot. */
function slotGeometry(tensor: CudaTensor): { slotWidth: number; rowWidth: number } {
  return {
    slotWidth: shapeElements(tensor.shape.slice(1)),
    rowWidth: tensor.shape.length > 2 ? shapeElements(tensor.shape.slice(2)) : 1,
  };
}

function requireSlot(tensor: CudaTensor, slot: number, name: string): void {
  const slots = tensor.shape[0] ?? 0;
  if (!Number.isInteger(slot) || slot < 0 || slot >= slots) {
    throw invalid('SLOT_OUT_OF_RANGE', `${name} ${slot} is outside the ${slots} slots of the tensor`);
  }
}

export interface CudaBackendOptions extends CudaContextOptions {}

export class CudaBackend implements Backend<CudaBuffer> {
  readonly name = 'cuda';
  readonly queuesWork = true;
  readonly cuda: CudaContext;
  readonly scratch: DeviceScratch;
  readonly blocks: BlockContext;
  readonly graphs: StepGraphs;
  /** Pinned host memory for the step's tables and read back, queued without waiting. */
  private readonly staging: StagingRing;
  private readonly ownsContext: boolean;
  /** This backend's tensor allocations by pointer (a weight given back is found without a search). */
  private readonly held = new Map<bigint, Allocation>();
  /** Where a weight's pointer was not allocated here: sources that carve tensors from their own allocations. */
  private readonly weightOwners: ((pointer: bigint) => boolean)[] = [];
  private readonly preparedValues = new WeakMap<object, Map<string, unknown>>();
  private allocated = 0;
  /** While a step's tail is enqueued (tail()): its recordings are not timed. */
  private inTail = false;
  /** DRAMA3_TAIL_PRIORITY: `level` never puts a tail below its step, `below` always, unset by TAIL_BELOW_MOST_ROWS. */
  private readonly tailPriority = process.env.DRAMA3_TAIL_PRIORITY;
  private readonly linearWorkspace = (bytes: number) => this.scratch.bytes(LINEAR_WORKSPACE, bytes);

  constructor(context: CudaContext | CudaBackendOptions = {}) {
    this.ownsContext = !(context instanceof CudaContext);
    this.cuda = context instanceof CudaContext ? context : new CudaContext(context);
    this.scratch = new DeviceScratch(this.cuda);
    this.graphs = new StepGraphs(this.cuda, () => this.allocations);
    this.staging = new StagingRing(this.cuda);
    const prepared = this.preparedValues;
    this.blocks = {
      cuda: this.cuda,
      scratch: this.scratch,
      linear: (x, weight, out, rows) => this.linear(x, weight, out, rows),
      linears: (x, segments, rows) => {
        fusedLinear(this.cuda, this.linearWorkspace, SPLIT_ROWS, x, segments, rows);
      },
      linearsCombinedBy: (x, segments, rows, combine) =>
        fusedLinearCombinedBy(this.cuda, this.linearWorkspace, SPLIT_ROWS, x, segments, rows, combine),
      prepared<T>(key: object, label: string, make: () => T): T {
        let values = prepared.get(key);
        if (values === undefined) {
          values = new Map();
          prepared.set(key, values);
        }
        if (!values.has(label)) values.set(label, make());
        return values.get(label) as T;
      },
      countAllocation: () => {
        this.allocated += 1;
      },
      releaseWeights: (tensors) => this.releaseWeights(tensors),
    };
  }

  /** Registers a source of weights carved from its own allocations: `giveBack` frees one, false if not its own. */
  addWeightOwner(giveBack: (pointer: bigint) => boolean): void {
    this.weightOwners.push(giveBack);
  }

  /** Frees weight tensors' storage (and their scales'): after the queued work, so nothing still reads them. */
  releaseWeights(tensors: readonly CudaTensor[]): void {
    this.cuda.synchronize();
    for (const pointer of tensors.flatMap((tensor) => [tensor.data.pointer, tensor.scales?.data.pointer])) {
      if (pointer === undefined) continue;
      const allocation = this.held.get(pointer);
      if (allocation !== undefined) {
        this.held.delete(pointer);
        allocation.free();
        continue;
      }
      if (!this.weightOwners.some((giveBack) => giveBack(pointer))) {
        throw invalid(
          'WEIGHT_NOT_OWNED',
          `no allocation of this backend holds the weight at 0x${pointer.toString(16)}`,
        );
      }
    }
  }

  get allocations(): number {
    return this.allocated + this.scratch.growths;
  }

  allocate(dtype: DType, shape: readonly number[], outsideSteps = false): CudaTensor {
    requireShape(shape);
    const count = shapeElements(shape);
    const bytes = Math.max(count * elementBytes(dtype), 1);
    const allocation = this.cuda.allocate(bytes, `${dtype} [${shape.join(', ')}]`);
    this.held.set(allocation.pointer, allocation);
    this.cuda.driver.fillBytes(allocation.pointer, 0, bytes, this.cuda.stream);
    if (!outsideSteps) this.allocated += 1;
    return { dtype, shape: [...shape], data: { pointer: allocation.pointer, dtype, elements: count } };
  }

  /** Frees tensors `allocate` made: after the queued work, so no copy still reads them. */
  release(tensors: readonly CudaTensor[]): void {
    this.cuda.synchronize();
    for (const tensor of tensors) {
      const allocation = this.held.get(tensor.data.pointer);
      if (allocation === undefined) {
        throw invalid(
          'TENSOR_NOT_HELD',
          `no allocation of this backend holds the ${tensor.dtype} [${tensor.shape.join(', ')}] at ` +
            `0x${tensor.data.pointer.toString(16)}: it was released already or not made by allocate`,
        );
      }
      this.held.delete(tensor.data.pointer);
      allocation.free();
    }
  }

  fromHost(dtype: DType, shape: readonly number[], elements: HostElements): CudaTensor {
    requireShape(shape);
    const count = shapeElements(shape);
    if (elements.length !== count) {
      throw invalid('TENSOR_SIZE_MISMATCH', `[${shape.join(', ')}] holds ${count} elements, got ${elements.length}`);
    }
    requireHostArray(dtype, elements);
    const allocation = this.cuda.upload(elements, `${dtype} [${shape.join(', ')}] weights`);
    this.held.set(allocation.pointer, allocation);
    return { dtype, shape: [...shape], data: { pointer: allocation.pointer, dtype, elements: count } };
  }

  weightStore(): CudaWeightStore {
    return new CudaWeightStore(this.cuda, (giveBack) => this.addWeightOwner(giveBack));
  }

  writeIntegers(target: CudaTensor, offset: number, values: Int32Array): void {
    const span = this.integerSpan(target, offset, values.length);
    this.cuda.driver.copyHostToDevice(span.pointer, values, values.byteLength, this.cuda.stream);
    this.cuda.synchronize();
  }

  readIntegers(source: CudaTensor, offset: number, target: Int32Array): void {
    if (target.byteLength > LARGEST_STAGED_BYTES) {
      this.cuda.download(this.integerSpan(source, offset, target.length).pointer, target);
      return;
    }
    target.set(this.readIntegersLater(source, offset, target.length).wait());
  }

  queueIntegers(target: CudaTensor, offset: number, values: Int32Array): void {
    if (values.byteLength > LARGEST_STAGED_BYTES) {
      this.writeIntegers(target, offset, values);
      return;
    }
    const span = this.integerSpan(target, offset, values.length);
    this.staging.write(span.pointer, new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
  }

  readIntegersLater(source: CudaTensor, offset: number, count: number): PendingIntegers {
    const span = this.integerSpan(source, offset, count);
    const read = this.staging.read(span.pointer, count * 4);
    return {
      wait: () => {
        const bytes = read.wait();
        return new Int32Array(bytes.buffer, bytes.byteOffset, count);
      },
    };
  }

  toHost(buffer: CudaBuffer, offset: number, count: number): Float64Array {
    const span = viewBuffer(buffer, offset, count);
    const stored = this.cuda.download(span.pointer, hostArrayFor(buffer.dtype, count));
    return decodeElements(buffer.dtype, stored);
  }

  view(buffer: CudaBuffer, offset: number, count: number): CudaBuffer {
    return viewBuffer(buffer, offset, count);
  }

  viewRows(tensor: CudaTensor, first: number, count: number): CudaTensor {
    const rows = tensor.shape[0] ?? 0;
    if (!Number.isInteger(first) || !Number.isInteger(count) || first < 0 || count < 0 || first + count > rows) {
      throw invalid('VIEW_OUT_OF_RANGE', `rows [${first}, ${first + count}) lie outside a tensor of ${rows} rows`);
    }
    const rowWidth = shapeElements(tensor.shape.slice(1));
    const data = viewBuffer(tensor.data, first * rowWidth, count * rowWidth);
    return { dtype: tensor.dtype, shape: [count, ...tensor.shape.slice(1)], data };
  }

  fillSlot(tensor: CudaTensor, slot: number, value: number): void {
    requireSlot(tensor, slot, 'slot');
    const { slotWidth } = slotGeometry(tensor);
    if (slotWidth === 0) return;
    const target = viewBuffer(tensor.data, slot * slotWidth, slotWidth).pointer;
    const { driver, stream } = this.cuda;
    switch (tensor.dtype) {
      case 'i32':
        if (!Number.isInteger(value)) throw invalid('FILL_VALUE_INVALID', `an i32 slot cannot hold ${value}`);
        driver.fillWords(target, value | 0, slotWidth, stream);
        return;
      case 'f32':
        driver.fillWords(target, float32Bits(value), slotWidth, stream);
        return;
      case 'bf16':
        fillHalfWords(this.cuda, { target, value: float32ToBf16Bits(value), count: slotWidth });
        return;
      default:
        throw invalid('FILL_DTYPE_UNSUPPORTED', `cannot fill a slot of a ${tensor.dtype} tensor`);
    }
  }

  copySlot(source: CudaTensor, fromSlot: number, target: CudaTensor, toSlot: number, rows: number): void {
    requireSlot(source, fromSlot, 'source slot');
    requireSlot(target, toSlot, 'target slot');
    const from = slotGeometry(source);
    const to = slotGeometry(target);
    const count = rows * from.rowWidth;
    if (
      source.dtype !== target.dtype ||
      from.rowWidth !== to.rowWidth ||
      !Number.isInteger(rows) ||
      rows < 0 ||
      count > from.slotWidth ||
      count > to.slotWidth
    ) {
      throw invalid('SLOT_COPY_MISMATCH', `cannot copy ${rows} rows between slots of different shapes`);
    }
    if (count === 0) return;
    const bytes = count * elementBytes(source.dtype);
    const start = viewBuffer(source.data, fromSlot * from.slotWidth, count).pointer;
    const end = viewBuffer(target.data, toSlot * to.slotWidth, count).pointer;
    this.cuda.driver.copyDeviceToDevice(end, start, bytes, this.cuda.stream);
  }

  copy(source: CudaBuffer, target: CudaBuffer, count: number): void {
    requireDtype(target, source.dtype, 'copy target');
    requireElements(source, count, 'copy source');
    requireElements(target, count, 'copy target');
    const bytes = count * elementBytes(source.dtype);
    if (bytes > 0) this.cuda.driver.copyDeviceToDevice(target.pointer, source.pointer, bytes, this.cuda.stream);
  }

  add(target: CudaBuffer, source: CudaBuffer, count: number): void {
    requireDtype(target, 'bf16', 'add target');
    requireDtype(source, 'bf16', 'add source');
    requireElements(target, count, 'add target');
    requireElements(source, count, 'add source');
    addInPlace(this.cuda, { target: target.pointer, source: source.pointer, count });
  }

  concatenateColumns(a: CudaBuffer, aCols: number, b: CudaBuffer, bCols: number, out: CudaBuffer, rows: number): void {
    for (const [buffer, name, cols] of [
      [a, 'a', aCols],
      [b, 'b', bCols],
      [out, 'out', aCols + bCols],
    ] as const) {
      requireDtype(buffer, 'bf16', `concatenateColumns ${name}`);
      requireElements(buffer, rows * cols, `concatenateColumns ${name}`);
    }
    concatenateColumns(this.cuda, { out: out.pointer, a: a.pointer, aCols, b: b.pointer, bCols, rows });
  }

  embedRecords(
    tokenTable: CudaTensor,
    codeTable: CudaTensor,
    records: CudaTensor,
    codebook: number,
    codeFirstRow: number,
    out: CudaBuffer,
    rows: number,
  ): void {
    const [vocab, cols] = tokenTable.shape as [number, number];
    this.requireTable(tokenTable, 'token table');
    this.requireTable(codeTable, 'code table', cols);
    this.requireRecords(records, rows);
    requireDtype(out, 'bf16', 'embedRecords out');
    requireElements(out, rows * cols, 'embedRecords out');
    embedRecords(this.cuda, {
      out: out.pointer,
      tokenTable: tokenTable.data.pointer,
      vocab,
      codeTable: codeTable.data.pointer,
      codeRows: codeTable.shape[0]!,
      cols,
      records: records.data.pointer,
      width: records.shape[1]!,
      codebook,
      codeFirstRow,
      rows,
    });
  }

  gatherCodes(
    codeTable: CudaTensor,
    records: CudaTensor,
    codebook: number,
    codeFirstRow: number,
    out: CudaBuffer,
    rows: number,
  ): void {
    this.requireTable(codeTable, 'code table');
    this.requireRecords(records, rows);
    const [codeRows, cols] = codeTable.shape as [number, number];
    requireDtype(out, 'bf16', 'gatherCodes out');
    requireElements(out, rows * cols, 'gatherCodes out');
    gatherCodes(this.cuda, {
      out: out.pointer,
      codeTable: codeTable.data.pointer,
      codeRows,
      records: records.data.pointer,
      width: records.shape[1]!,
      codebook,
      codeFirstRow,
      rows,
      cols,
    });
  }

  gatherSlotRecords(slab: CudaTensor, lanes: CudaBuffer, out: CudaTensor, batch: number): void {
    this.moveSlotRecords('gather', out, lanes, slab, batch);
  }

  scatterSlotRecords(records: CudaTensor, lanes: CudaBuffer, slab: CudaTensor, batch: number): void {
    this.moveSlotRecords('scatter', records, lanes, slab, batch);
  }

  towerInput(a: TowerInput<CudaBuffer>, out: CudaBuffer, rows: number): void {
    this.requireTable(a.codeTable, 'code table');
    this.requireRecords(a.records, rows);
    const [codeRows, codeCols] = a.codeTable.shape as [number, number];
    requireDtype(a.input, 'bf16', 'towerInput input');
    requireElements(a.input, rows * a.inputCols, 'towerInput input');
    requireDtype(out, 'bf16', 'towerInput out');
    requireElements(out, rows * (codeCols + a.inputCols), 'towerInput out');
    const weightDtype = this.towerNormDtype(a.codeNorm, codeCols, a.inputNorm, a.inputCols);
    towerInput(this.cuda, {
      out: out.pointer,
      codeTable: a.codeTable.data.pointer,
      codeRows,
      codeCols,
      records: a.records.data.pointer,
      width: a.records.shape[1]!,
      codebook: a.codebook,
      codeFirstRow: a.codeFirstRow,
      codeWeight: a.codeNorm.data.pointer,
      input: a.input.pointer,
      inputCols: a.inputCols,
      inputWeight: a.inputNorm.data.pointer,
      weightDtype,
      rows,
      eps: a.eps,
    });
  }

  zeroCentredRmsNorm(
    x: CudaBuffer,
    weight: CudaTensor,
    out: CudaBuffer,
    rows: number,
    cols: number,
    eps: number,
  ): void {
    const norm = this.normArguments(x, weight, out, rows, cols, eps);
    rmsNorm(this.cuda, { ...norm, zeroCentred: true });
  }

  addZeroCentredRmsNorm(
    x: CudaBuffer,
    source: CudaBuffer,
    weight: CudaTensor,
    out: CudaBuffer,
    rows: number,
    cols: number,
    eps: number,
  ): void {
    const norm = this.normArguments(x, weight, out, rows, cols, eps);
    requireDtype(source, 'bf16', 'add source');
    requireElements(source, rows * cols, 'add source');
    addRmsNorm(this.cuda, { ...norm, source: source.pointer });
  }

  /** The tower input's two norm weights: bf16 or f32, one dtype for both (one kernel reads them). */
  private towerNormDtype(codeNorm: CudaTensor, codeCols: number, inputNorm: CudaTensor, inputCols: number) {
    const dtype = normWeightDtype(codeNorm, codeCols, 'towerInput code norm weight');
    if (normWeightDtype(inputNorm, inputCols, 'towerInput input norm weight') !== dtype) {
      throw invalid(
        'NORM_WEIGHT_DTYPE_UNSUPPORTED',
        `the tower input's norm weights must share a dtype, got ${codeNorm.dtype} and ${inputNorm.dtype}`,
      );
    }
    return dtype;
  }

  private normArguments(x: CudaBuffer, weight: CudaTensor, out: CudaBuffer, rows: number, cols: number, eps: number) {
    requireDtype(x, 'bf16', 'norm input');
    requireDtype(out, 'bf16', 'norm output');
    requireElements(x, rows * cols, 'norm input');
    requireElements(out, rows * cols, 'norm output');
    const weightDtype = normWeightDtype(weight, cols, 'norm weight');
    return { out: out.pointer, x: x.pointer, weight: weight.data.pointer, weightDtype, rows, cols, eps };
  }

  /** out [rows, out] = x [rows, in] · weightᵀ: bf16 out (one rounding), or the fp32 sum when `out` is f32. */
  linear(
    x: CudaBuffer,
    weight: LinearWeight<CudaBuffer>,
    out: CudaBuffer,
    rows: number,
    output?: 'bf16' | 'f32',
  ): void {
    if (weight.dtype !== 'bf16') {
      throw invalid(
        'LINEAR_WEIGHT_DTYPE_UNSUPPORTED',
        `the cuda linear runs bf16 weights only, got ${weight.dtype} [${weight.shape.join(', ')}]`,
      );
    }
    const [outFeatures, inFeatures] = weight.shape as [number, number];
    requireDtype(x, 'bf16', 'linear input');
    requireElements(x, rows * inFeatures, 'linear input');
    if (out.dtype !== (output ?? out.dtype) || (out.dtype !== 'bf16' && out.dtype !== 'f32')) {
      const wanted = output ?? 'bf16 or f32';
      throw invalid('TENSOR_DTYPE_UNSUPPORTED', `linear output must be ${wanted}, got a ${out.dtype} buffer`);
    }
    requireElements(out, rows * outFeatures, 'linear output');
    // Sized for the largest split launch up to `rows`, so that a later call of fewer rows never grows it.
    const reserve = gemmWorkspaceBytes(Math.min(rows, SPLIT_ROWS), outFeatures, inFeatures);
    const workspace = reserve > 0 ? this.scratch.bytes(LINEAR_WORKSPACE, reserve) : undefined;
    gemm(this.cuda, {
      y: out.pointer,
      x: x.pointer,
      w: weight.data.pointer,
      workspace,
      rows,
      outFeatures,
      inFeatures,
      output: out.dtype,
    });
  }

  attention(
    weights: AttentionWeights<CudaBuffer>,
    x: CudaBuffer,
    slab: KeyValueSlab<CudaBuffer>,
    tables: CallTables<CudaBuffer>,
    out: CudaBuffer,
    rows: number,
  ): void {
    runAttention(this.blocks, weights, x, slab, tables, out, rows);
  }

  deltaNet(
    weights: DeltaNetWeights<CudaBuffer>,
    x: CudaBuffer,
    slab: DeltaNetSlab<CudaBuffer>,
    tables: CallTables<CudaBuffer>,
    out: CudaBuffer,
    rows: number,
  ): void {
    runDeltaNet(this.blocks, weights, x, slab, tables, out, rows);
  }

  moe(weights: MoeWeights<CudaBuffer>, x: CudaBuffer, out: CudaBuffer, rows: number): void {
    runMoe(this.blocks, weights, x, out, rows);
  }

  swiGlu(weights: SwiGluWeights<CudaBuffer>, x: CudaBuffer, out: CudaBuffer, rows: number): void {
    runSwiGlu(this.blocks, weights, x, out, rows);
  }

  sampleMain(
    logits: CudaBuffer,
    count: number,
    semanticCount: number,
    candidates: CudaTensor,
    state: SamplerState<CudaBuffer>,
    records: CudaTensor,
    batch: number,
  ): void {
    const logitsDtype = this.requireSamplerInputs(logits, count, state, records, batch);
    requireDtype(candidates.data, 'i32', 'candidate ids');
    requireElements(candidates.data, count, 'candidate ids');
    sampleMain(this.cuda, {
      records: records.data.pointer,
      recordStride: records.shape[1]!,
      logits: logits.pointer,
      logitsDtype,
      logitsStride: count,
      count,
      semanticCount,
      candidates: candidates.data.pointer,
      laneTable: state.lanes.pointer,
      lanes: batch,
      rasWindow: state.rasWindow.data.pointer,
    });
  }

  sampleCode(
    logits: CudaBuffer,
    count: number,
    column: number,
    state: SamplerState<CudaBuffer>,
    records: CudaTensor,
    batch: number,
  ): void {
    const logitsDtype = this.requireSamplerInputs(logits, count, state, records, batch);
    const width = records.shape[1]!;
    if (!Number.isInteger(column) || column < 1 || 1 + column >= width) {
      throw invalid('SAMPLER_COLUMN_INVALID', `code column ${column} is outside records of width ${width}`);
    }
    sampleCode(this.cuda, {
      out: records.data.pointer,
      outStride: width,
      outOffset: 1 + column,
      logits: logits.pointer,
      logitsDtype,
      logitsStride: count,
      count,
      column,
      laneTable: state.lanes.pointer,
      lanes: batch,
    });
  }

  captureStep(key: string, enqueue: () => void): void {
    this.graphs.run(key, enqueue, !this.inTail);
  }

  /**
   * Tails of steps up to TAIL_BELOW_MOST_ROWS rows run a priority below the step (DRAMA3_TAIL_PRIORITY=level: never,
   * =below: always): a small step's head is a chain of short kernels that waits for any block queued before its own.
   */
  tail(work: () => void, rows: number): void {
    // Untimed either way, so that the stats time the same launches with tails beside or in place.
    const untimed = (): void => {
      this.inTail = true;
      try {
        work();
      } finally {
        this.inTail = false;
      }
    };
    if (!this.cuda.tailsBeside) {
      untimed();
      return;
    }
    const below = this.tailPriority === 'below' || (this.tailPriority !== 'level' && rows <= TAIL_BELOW_MOST_ROWS);
    this.cuda.tail(() => this.scratch.within('tail.', untimed), below);
  }

  joinTail(): void {
    this.cuda.joinTail();
  }

  stepGraphStats(): StepGraphStats {
    return this.graphs.stats;
  }

  /** Frees every recording, scratch buffer and tensor of this backend (and the device context if it opened it). */
  close(): void {
    this.cuda.synchronize();
    this.graphs.release();
    this.staging.release();
    this.scratch.release();
    for (const allocation of this.held.values()) allocation.free();
    this.held.clear();
    if (this.ownsContext) this.cuda.close();
  }

  private integerSpan(tensor: CudaTensor, offset: number, count: number): CudaBuffer {
    requireDtype(tensor.data, 'i32', 'integer tensor');
    return viewBuffer(tensor.data, offset, count);
  }

  private requireTable(table: CudaTensor, name: string, cols?: number): void {
    requireDtype(table.data, 'bf16', name);
    if (table.shape.length !== 2 || (cols !== undefined && table.shape[1] !== cols)) {
      throw invalid('TENSOR_SHAPE_MISMATCH', `${name} [${table.shape.join(', ')}] must be [rows, ${cols ?? 'cols'}]`);
    }
  }

  private requireRecords(records: CudaTensor, rows: number): void {
    requireDtype(records.data, 'i32', 'records');
    if (records.shape.length !== 2 || (records.shape[0] ?? 0) < rows) {
      throw invalid('TENSOR_SHAPE_MISMATCH', `records [${records.shape.join(', ')}] must be [≥ ${rows}, width]`);
    }
  }

  private moveSlotRecords(
    direction: 'gather' | 'scatter',
    records: CudaTensor,
    lanes: CudaBuffer,
    slab: CudaTensor,
    batch: number,
  ): void {
    this.requireRecords(records, batch);
    requireDtype(slab.data, 'i32', 'record slab');
    requireDtype(lanes, 'i32', 'lane table');
    requireElements(lanes, batch * LANE_ENTRY, 'lane table');
    const width = slab.shape[1]!;
    if (records.shape[1] !== width) {
      throw invalid('TENSOR_SHAPE_MISMATCH', `records of width ${records.shape[1]} and a slab of width ${width}`);
    }
    moveSlotRecords(this.cuda, {
      direction,
      records: records.data.pointer,
      slab: slab.data.pointer,
      lanes: lanes.pointer,
      laneStride: LANE_ENTRY,
      width,
      batch,
    });
  }

  private requireSamplerInputs(
    logits: CudaBuffer,
    count: number,
    state: SamplerState<CudaBuffer>,
    records: CudaTensor,
    batch: number,
  ): 'bf16' | 'f32' {
    if (logits.dtype !== 'bf16' && logits.dtype !== 'f32') {
      throw invalid('TENSOR_DTYPE_UNSUPPORTED', `sampler logits must be bf16 or f32, got ${logits.dtype}`);
    }
    requireElements(logits, batch * count, 'sampler logits');
    requireDtype(state.lanes, 'i32', 'lane table');
    requireElements(state.lanes, batch * LANE_ENTRY, 'lane table');
    requireDtype(state.rasWindow.data, 'i32', 'RAS window');
    this.requireRecords(records, batch);
    if ((records.shape[1] ?? 0) < 2) throw invalid('TENSOR_SHAPE_MISMATCH', 'frame records need at least 2 fields');
    return logits.dtype;
  }
}
