// The Backend interface: the coarse ops Drama 3 is written against (ARCHITECTURE.md). A backend owns its storage
// (`B`): typed arrays on the cpu, device allocations on cuda. The model only composes these ops; every op's arithmetic,
// precision and rounding live in the backend.
// Conventions: T rows in one call, B lanes of a decode step, S lane slots, R rows of capacity per slot, H hidden
// width; activations [T, C] row-major with C contiguous; linear weights [out, in] row-major (torch's nn.Linear
// layout), y = x · Wᵀ. Slab and call-table layouts are those of docs/exactness.md ("Lane slots and call tables").

/** Element types of tensors: weights keep their checkpoint dtype, activations are bf16, state bf16 or f32. */
export type DType = 'bf16' | 'f16' | 'f32' | 'e4m3' | 'i32';

/** A tensor: dtype, row-major shape and its storage. e4m3 weights carry f32 scales, one per 128×128 block. */
export interface Tensor<B> {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly data: B;
  /** e4m3 only: [ceil(out/128), ceil(in/128)] f32, true weight = value × scale of its block. */
  readonly scales?: Tensor<B>;
}

/** Host arrays a tensor can be made from: 16-bit words (bf16, f16), bytes (e4m3), f32 or i32 elements. */
export type HostElements = Uint16Array | Uint8Array | Float32Array | Int32Array;

/** A linear layer's weight: a [out, in] tensor (bf16, f16, f32, or e4m3 with block scales). */
export type LinearWeight<B> = Tensor<B>;

/** What the tower input reads: a codebook's code rows from the records, and the layer's input rows. */
export interface TowerInput<B> {
  /** [code rows, codeCols]. */
  readonly codeTable: Tensor<B>;
  /** Frame records [≥ T, 1 + K]; the code is records[t][1 + codebook]. */
  readonly records: Tensor<B>;
  readonly codebook: number;
  readonly codeFirstRow: number;
  /** enorm, [codeCols]. */
  readonly codeNorm: Tensor<B>;
  /** [T, inputCols]. */
  readonly input: B;
  readonly inputCols: number;
  /** hnorm, [inputCols]. */
  readonly inputNorm: Tensor<B>;
  readonly eps: number;
}

/** A SwiGLU MLP: down(silu(gate(x)) · up(x)). */
export interface SwiGluWeights<B> {
  readonly gate: LinearWeight<B>;
  readonly up: LinearWeight<B>;
  readonly down: LinearWeight<B>;
}

/** The sparse MoE block: router softmax → top-k → renormalised experts, plus the sigmoid-gated shared expert. */
export interface MoeWeights<B> {
  readonly router: LinearWeight<B>;
  readonly experts: readonly SwiGluWeights<B>[];
  readonly topK: number;
  readonly shared: SwiGluWeights<B>;
  readonly sharedGate: LinearWeight<B>;
}

/** An attention block's scalar shape: heads, head dim, partial RoPE, the output gate and the q/k norms' eps. */
export interface AttentionGeometry {
  readonly heads: number;
  readonly keyValueHeads: number;
  readonly headDim: number;
  readonly rotaryDim: number;
  readonly ropeTheta: number;
  readonly ropeStyle: 'neox' | 'interleaved';
  readonly outputGate: boolean;
  readonly eps: number;
}

/** Softmax attention with q/k RMSNorm per head, partial RoPE, GQA; the backbone's form adds the output gate. */
export interface AttentionWeights<B> extends AttentionGeometry {
  /** [heads·hd·2, H] with per head [query | gate] rows when outputGate, else [heads·hd, H]. */
  readonly qProj: LinearWeight<B>;
  readonly kProj: LinearWeight<B>;
  readonly vProj: LinearWeight<B>;
  readonly oProj: LinearWeight<B>;
  /** Zero-centred norms over the head dim. [hd] */
  readonly qNorm: Tensor<B>;
  readonly kNorm: Tensor<B>;
}

/** Gated DeltaNet (linear attention) weights; conv is [C, 1, W] with C = 2·Kh·Kd + Vh·Vd. */
export interface DeltaNetWeights<B> {
  readonly inProjQkv: LinearWeight<B>;
  readonly inProjZ: LinearWeight<B>;
  readonly inProjB: LinearWeight<B>;
  readonly inProjA: LinearWeight<B>;
  readonly outProj: LinearWeight<B>;
  readonly conv: Tensor<B>;
  /** [Vh] */
  readonly aLog: Tensor<B>;
  readonly dtBias: Tensor<B>;
  /** Plain-weight gated output norm over the value head dim. [Vd] */
  readonly norm: Tensor<B>;
  readonly keyHeads: number;
  readonly valueHeads: number;
  readonly keyDim: number;
  readonly valueDim: number;
  readonly convKernel: number;
  readonly eps: number;
}

/** One attention layer's K/V for every slot: keys, values bf16 [S, R, Hkv, D]; row index = absolute position. */
export interface KeyValueSlab<B> {
  readonly keys: Tensor<B>;
  readonly values: Tensor<B>;
}

/** One Gated DeltaNet layer's carried state for every slot: conv bf16 [S, W−1, C], recurrent f32 [S, Vh, Kd, Vd]. */
export interface DeltaNetSlab<B> {
  readonly conv: Tensor<B>;
  readonly recurrent: Tensor<B>;
}

/** Width of one lane-table entry (LANE_* are its fields, int32; temperature and top-p as float32 bits). */
export const LANE_ENTRY = 9;
export const LANE_SLOT = 0;
export const LANE_POSITION = 1;
export const LANE_FRAME = 2;
export const LANE_SEED_LOW = 3;
export const LANE_SEED_HIGH = 4;
export const LANE_TEMPERATURE = 5;
export const LANE_TOP_P = 6;
export const LANE_TOP_K = 7;
export const LANE_GREEDY = 8;

/** Width of a sequence-table entry: (slot, firstRow, rowCount, startPosition). */
export const SEQUENCE_ENTRY = 4;
/** Width of a row-table entry: (slot, position). */
export const ROW_ENTRY = 2;
/** Frames of semantic history in the RAS window; frame f's code goes to entry f mod RAS_WINDOW. */
export const RAS_WINDOW = 16;

/** The call tables of one backbone/tower pass (i32 device buffers written before the call). */
export interface CallTables<B> {
  /** [T, 2] (slot, position) per row. */
  readonly rows: B;
  /** [Q, 4] (slot, firstRow, rowCount, startPosition) per sequence. */
  readonly sequences: B;
  readonly sequenceCount: number;
}

/** What the sampler needs beside the logits: the lane table [B, 9] and the RAS window slab [S, 16]. */
export interface SamplerState<B> {
  readonly lanes: B;
  readonly rasWindow: Tensor<B>;
}

export interface Backend<B> {
  readonly name: string;
  /**
   * A zeroed tensor (i32 zeros, floats +0). Allocation belongs in load and plan, never in a step. `outsideSteps`:
   * storage no step reads (a reference snapshot), so it is not counted in `allocations` and keeps recorded steps.
   */
  allocate(dtype: DType, shape: readonly number[], outsideSteps?: boolean): Tensor<B>;
  /**
   * Gives back tensors made by `allocate` outside every step (the reference cache's snapshots), once the work queued
   * before the call is done with them; releasing one twice, or one this backend did not allocate, is refused.
   */
  release(tensors: readonly Tensor<B>[]): void;
  /** A tensor holding host elements as stored (weights keep their checkpoint bits: bf16/f16 as 16-bit words, e4m3 as
   *  bytes, f32, i32). The cpu backend keeps the array itself; cuda copies it to the device. */
  fromHost(dtype: DType, shape: readonly number[], elements: HostElements): Tensor<B>;
  /** A store a streamed checkpoint load fills in place (backends without one load tensor by tensor via fromHost). */
  weightStore?(): WeightStore<B>;
  /** Buffers a step may read allocated so far (allocate calls and scratch growth): a step after plan must not change
   *  it, and a recorded step is recorded again when it has changed (its buffers may have moved). */
  readonly allocations: number;
  /** Host int32 values → elements [offset, offset + values.length) of an i32 tensor (tables, prompt records). */
  writeIntegers(target: Tensor<B>, offset: number, values: Int32Array): void;
  /** Elements [offset, offset + target.length) of an i32 tensor → host, after the work queued so far. */
  readIntegers(source: Tensor<B>, offset: number, target: Int32Array): void;
  /**
   * `writeIntegers` queued behind the work so far without waiting for it (a frame step's tables): work queued before
   * still reads the old values, work queued after the new. The cpu, which queues nothing, writes at once.
   */
  queueIntegers(target: Tensor<B>, offset: number, values: Int32Array): void;
  /** Starts reading `count` elements of an i32 tensor behind the work queued so far (the step's read back). */
  readIntegersLater(source: Tensor<B>, offset: number, count: number): PendingIntegers;
  /** Whether work returns before the device has done it (cuda): a step can be queued while the one before runs. */
  readonly queuesWork: boolean;
  /** A host copy of `count` elements from `offset`, as doubles (tests and debugging). */
  toHost(buffer: B, offset: number, count: number): Float64Array;
  /** Elements [offset, offset + count) as a buffer sharing storage. */
  view(buffer: B, offset: number, count: number): B;
  /** Rows [first, first + count) (dimension 0) of a tensor, sharing storage. */
  viewRows(tensor: Tensor<B>, first: number, count: number): Tensor<B>;
  /** Sets every element of slot `slot` of a [S, …] tensor to `value`. */
  fillSlot(tensor: Tensor<B>, slot: number, value: number): void;
  /** Copies the first `rows` rows (dimension 1) of slot `fromSlot` of `source` to slot `toSlot` of `target`. */
  copySlot(source: Tensor<B>, fromSlot: number, target: Tensor<B>, toSlot: number, rows: number): void;
  /** target[0, count) = source[0, count), queued like any op; both buffers of one dtype. */
  copy(source: B, target: B, count: number): void;
  /** target += source over `count` elements (the residual add). */
  add(target: B, source: B, count: number): void;
  /** out [T, a + b] = [a | b] row by row. */
  concatenateColumns(a: B, aCols: number, b: B, bCols: number, out: B, rows: number): void;
  /**
   * Backbone input rows from frame records [T, 1 + K] = (token, code[0..K−1]): a record with code[0] < 0 is a text
   * row, tokenTable[token]; else (tokenTable[token] + codeTable[codeFirstRow + code[codebook]]) / sqrt(2).
   */
  embedRecords(
    tokenTable: Tensor<B>,
    codeTable: Tensor<B>,
    records: Tensor<B>,
    codebook: number,
    codeFirstRow: number,
    out: B,
    rows: number,
  ): void;
  /** out[t] = codeTable[codeFirstRow + code] with code = records[t][1 + codebook]; a zero row where code < 0. */
  gatherCodes(
    codeTable: Tensor<B>,
    records: Tensor<B>,
    codebook: number,
    codeFirstRow: number,
    out: B,
    rows: number,
  ): void;
  /** records [B, 1 + K] ← slab [S, 1 + K] rows of each lane's slot (lane table), and the reverse. */
  gatherSlotRecords(slab: Tensor<B>, lanes: B, out: Tensor<B>, batch: number): void;
  scatterSlotRecords(records: Tensor<B>, lanes: B, slab: Tensor<B>, batch: number): void;
  /**
   * The tower layer's input rows, out [T, codeCols + inputCols] = [enorm(codeTable row) | hnorm(input row)]: the code
   * row as gatherCodes gathers it (a zero row where the code is −1), each half zero-centred normed; the bits of
   * gatherCodes, zeroCentredRmsNorm of each half and concatenateColumns. `out` overlaps no input.
   */
  towerInput(input: TowerInput<B>, out: B, rows: number): void;
  /** y = x · rsqrt(mean x² + eps) · (1 + w), rows of width cols. */
  zeroCentredRmsNorm(x: B, weight: Tensor<B>, out: B, rows: number, cols: number, eps: number): void;
  /** The residual add and the norm after it: `add(x, source)` then `zeroCentredRmsNorm(x, …, out)`, the same bits. */
  addZeroCentredRmsNorm(x: B, source: B, weight: Tensor<B>, out: B, rows: number, cols: number, eps: number): void;
  /** out = x · weightᵀ, rounded to bf16 as an activation, or the fp32 sums themselves with output 'f32' (logits). */
  linear(x: B, weight: LinearWeight<B>, out: B, rows: number, output?: 'bf16' | 'f32'): void;
  /** T rows at the (slot, position) of the row table: appends their K/V to their slot, attends causally; out [T, H]. */
  attention(
    weights: AttentionWeights<B>,
    x: B,
    slab: KeyValueSlab<B>,
    tables: CallTables<B>,
    out: B,
    rows: number,
  ): void;
  /** T rows through Gated DeltaNet, each sequence carrying its slot's state; out [T, H]. */
  deltaNet(weights: DeltaNetWeights<B>, x: B, slab: DeltaNetSlab<B>, tables: CallTables<B>, out: B, rows: number): void;
  moe(weights: MoeWeights<B>, x: B, out: B, rows: number): void;
  swiGlu(weights: SwiGluWeights<B>, x: B, out: B, rows: number): void;
  /**
   * Draws `main` for each of `batch` lanes from logits [B, N] (candidate ids [N]; indices < semanticCount are
   * semantic): writes records[b] = (candidates[chosen], chosen or −1 for a non-semantic pick); RAS per lane.
   */
  sampleMain(
    logits: B,
    count: number,
    semanticCount: number,
    candidates: Tensor<B>,
    state: SamplerState<B>,
    records: Tensor<B>,
    batch: number,
  ): void;
  /** Draws code[column] for each lane from logits [B, count] into records[b][1 + column]. */
  sampleCode(logits: B, count: number, column: number, state: SamplerState<B>, records: Tensor<B>, batch: number): void;
  /**
   * Runs the device work `enqueue` issues for one frame step, as a recorded graph per `key` (one per batch size) on
   * a backend that can replay one: the first call records and launches it, later calls only launch it. A backend
   * without it (the cpu) leaves the hook absent and the model calls `enqueue` itself. `enqueue` must not read back,
   * write tables or allocate; its host values (shapes, the batch) must be the same on every call with that key.
   */
  captureStep?(key: string, enqueue: () => void): void;
  /** How many steps captureStep has recorded, and run directly instead (absent without captureStep). */
  stepGraphStats?(): StepGraphStats;
  /**
   * Queues `work` (a frame step's tail: its ops, a captureStep of them, their readIntegersLater) after the work queued
   * so far, to run beside the work queued after it until joinTail; its ops use scratch of their own, and its
   * captureStep recordings are not timed in stepGraphStats. `work` must not write what the work queued after it reads
   * or writes before joinTail, nor read what that work writes. `rows`: the step's rows (its batch bucket), by which
   * a backend may let the next step's head go first. Absent (the cpu): the model calls `work` itself.
   */
  tail?(work: () => void, rows: number): void;
  /** Work queued from now on waits for every tail queued so far (absent with tail). */
  joinTail?(): void;
}

/** A read started by readIntegersLater: `wait` waits for it and returns the elements (once). */
export interface PendingIntegers {
  wait(): Int32Array;
}

/** Counts since the backend was made: graphs recorded (first ones and re-recordings), steps run without one. */
export interface StepGraphStats {
  readonly recorded: number;
  /** Steps run directly because their recording failed. */
  readonly direct: number;
  /** Launches of a held recording, and the device's time in them (event to event on the stream, finished ones). */
  readonly replays: number;
  readonly replayMs: number;
}

// Where a streamed checkpoint load puts weights: storage for each tensor, reserved (under the backend's allocation
// limit) before any byte is read, filled in place from the stream's slots, then handed to the model loaders as
// tensors without another copy. The cuda store copies slots to the device asynchronously from pinned host memory;
// the cpu store keeps the bytes on the host.

/** Storage of one tensor's bytes. */
export interface WeightBlock {
  readonly bytes: number;
  readonly label: string;
}

/** Two host slots of one length; free() gives them back once no copy reads them. */
export interface StreamSlots {
  readonly slots: readonly Uint8Array[];
  free(): void;
}

export interface WeightStore<B> {
  /** Two page-aligned host slots of `bytes` each (pinned on cuda). */
  slots(bytes: number): StreamSlots;
  /** Storage for `bytes` bytes; throws a named error when the limit or the device refuses. */
  reserve(bytes: number, label: string): WeightBlock;
  /** Queues a copy of `source` (bytes of a slot) into `block` from byte `offset`. */
  write(block: WeightBlock, offset: number, source: Uint8Array): void;
  /** A wait that ends once every write queued so far has read its source. */
  fence(): () => void;
  /** The tensor over `block`'s bytes from `offset` (each one handed out is one piece given back later). */
  tensor(block: WeightBlock, offset: number, dtype: DType, shape: readonly number[]): Tensor<B>;
  /** A new block holding rows `ids` of the [rows, rowBytes] bytes of `block` from byte `offset`, in that order. */
  gatherRows(block: WeightBlock, offset: number, rowBytes: number, ids: Int32Array, label: string): WeightBlock;
  /** Frees a block none of whose tensors the model holds (or all of them, when a load fails). */
  release(block: WeightBlock): void;
}
