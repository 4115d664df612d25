// Loads a checkpoint's weights by streaming it: every tensor of the weight map is checked against the file (dtype and
// shape) before anything is allocated, then storage for all of them is reserved through the backend's weight store,
// then the shards are read once in file order through two host slots straight into that storage. The model loaders
// then take the tensors where they lie: no second copy. A failure at any step frees everything reserved.
// A layer's routed experts share one block: the MoE block packs them and gives them all back together, so one
// reserve and one free stand for thousands (the full checkpoint's 61440 expert tensors in 40 blocks).
// A tensor of which the model keeps only some rows (an untied head's candidate rows) is read and stored as those rows
// alone: each run of consecutive ids is one read, and the rest of the tensor never leaves the disk.
import type {
  Backend,
  DType,
  LinearWeight,
  SwiGluWeights,
  Tensor,
  WeightBlock,
  WeightStore,
} from '../backend/types.ts';

import { alignDown, alignUp, DIRECT_ALIGNMENT, type FileAccess } from '../checkpoint/direct-read.ts';
import type { SafetensorsCheckpoint } from '../checkpoint/safetensors-reader.ts';
import { fileOrder, type StreamedTensor, type StreamReport, streamTensors } from '../checkpoint/slot-stream.ts';
import { DramaError, isDramaError } from '../errors.ts';
import {
  type CheckedTensor,
  checkedStored,
  type RowBlock,
  requireRowShape,
  type WeightSource,
} from './tensor-source.ts';
import type { SwiGluNames, TensorSpec } from './weights.ts';

/** Slot length when the caller names none: large enough for long sequential reads, small beside any checkpoint (a
 *  checkpoint whose shards are shorter gets slots of its longest shard). */
export const DEFAULT_SLOT_BYTES = 64 * 1024 * 1024;

export interface StreamedLoadOptions {
  readonly slotBytes?: number;
  /** Most bytes one read asks for (slot-stream.ts: a window's reads run together). */
  readonly readPieceBytes?: number;
  /** Try O_DIRECT first (default true). */
  readonly direct?: boolean;
  readonly access?: FileAccess;
  readonly notice?: (message: string) => void;
  readonly onProgress?: (bytesDone: number, totalBytes: number) => void;
}

export interface StreamedLoadReport extends StreamReport {
  /** From the first check to the last byte streamed, and of that the reserving of storage. */
  readonly seconds: number;
  readonly reserveSeconds: number;
  readonly tensors: number;
  readonly slotBytes: number;
}

/** Where a tensor starts within a shared block: a multiple of this (the device allocator's own alignment). */
const MEMBER_ALIGNMENT = 256;

interface Entry {
  readonly dtype: DType;
  readonly shape: readonly number[];
  /** The rows of the file's tensor that were stored, in this order (undefined: the whole tensor). */
  readonly keptRows: Int32Array | undefined;
  readonly block: WeightBlock;
  /** Where the tensor's bytes start within the block, and how many there are. */
  readonly offset: number;
  readonly bytes: number;
  /** Whether the model holds a tensor over these bytes (a block none of whose tensors is taken is freed by finish()). */
  taken: boolean;
}

/** A checked tensor as it will be stored: whole, or only `keptRows` (then `stored.byteLength` is theirs). */
interface Planned {
  readonly spec: TensorSpec;
  readonly stored: CheckedTensor;
  readonly shape: readonly number[];
  readonly keptRows: Int32Array | undefined;
}

/** One block to reserve: its tensors, each at its offset. */
interface BlockPlan {
  readonly label: string;
  readonly bytes: number;
  readonly members: readonly { readonly planned: Planned; readonly offset: number }[];
}

/** One file read of the stream and where its bytes go: a whole tensor, or one run of a tensor's kept rows. */
interface Read extends StreamedTensor {
  readonly entry: Entry;
  /** Where the read's first byte lies in the entry's tensor. */
  readonly into: number;
}

/** `stored` as the model keeps it: only `ids`' rows when given (each id checked, none repeated), else whole. */
function planTensor(spec: TensorSpec, stored: CheckedTensor, ids: Int32Array | undefined): Planned {
  if (ids === undefined) return { spec, stored, shape: spec.shape, keptRows: undefined };
  const [rows, ...rest] = spec.shape;
  const outside = ids.find((id) => !Number.isInteger(id) || id < 0 || id >= rows!);
  if (outside !== undefined) throw rowOutOfRange(spec.name, outside, rows!);
  // A repeated id would read the same bytes twice into two places: keep the whole tensor and gather instead.
  if (new Set(ids).size !== ids.length) return { spec, stored, shape: spec.shape, keptRows: undefined };
  const byteLength = (stored.byteLength / rows!) * ids.length;
  return { spec, stored: { ...stored, byteLength }, shape: [ids.length, ...rest], keptRows: ids };
}

/** Adds the file reads that fill `entry` as `plan` stores it to `reads`: the whole tensor, or one per run of ids. */
function addReads(reads: Read[], plan: Planned, entry: Entry): void {
  const { spec, stored, keptRows } = plan;
  const { file, fileOffset, byteLength } = stored;
  if (keptRows === undefined) {
    reads.push({ name: spec.name, file, fileOffset, byteLength, entry, into: 0 });
    return;
  }
  const rowBytes = byteLength / keptRows.length;
  for (let first = 0; first < keptRows.length; ) {
    let end = first + 1;
    while (end < keptRows.length && keptRows[end] === keptRows[end - 1]! + 1) end += 1;
    const row = keptRows[first]!;
    reads.push({
      name: `${spec.name} rows ${row}..${row + end - first - 1}`,
      file,
      fileOffset: fileOffset + row * rowBytes,
      byteLength: (end - first) * rowBytes,
      entry,
      into: first * rowBytes,
    });
    first = end;
  }
}

function rowOutOfRange(name: string, row: number, rows: number): DramaError {
  return new DramaError('TENSOR_ROW_OUT_OF_RANGE', `row ${row} lies outside the ${rows} rows of ${name}`, {
    kind: 'bad_checkpoint',
    param: name,
  });
}

/** The blocks for `checked`, in order: a block of its own for each tensor, one for each layer's routed experts. */
function blockPlans(checked: readonly Planned[]): BlockPlan[] {
  const plans: { label: string; bytes: number; members: BlockPlan['members'][number][] }[] = [];
  const shared = new Map<number, (typeof plans)[number]>();
  for (const member of checked) {
    const { spec, stored } = member;
    if (spec.expert === undefined || spec.layer === undefined) {
      plans.push({ label: `tensor ${spec.name}`, bytes: stored.byteLength, members: [{ planned: member, offset: 0 }] });
      continue;
    }
    let plan = shared.get(spec.layer);
    if (plan === undefined) {
      plan = { label: `the routed experts of layer ${spec.layer}`, bytes: 0, members: [] };
      shared.set(spec.layer, plan);
      plans.push(plan);
    }
    const offset = Math.ceil(plan.bytes / MEMBER_ALIGNMENT) * MEMBER_ALIGNMENT;
    plan.members.push({ planned: member, offset });
    plan.bytes = offset + stored.byteLength;
  }
  return plans;
}

/** Frees `blocks`; one that cannot be freed does not hide the load's own error, which is what the caller sees. */
function releaseAll(store: WeightStore<unknown>, blocks: Iterable<WeightBlock>): void {
  for (const block of blocks) {
    try {
      store.release(block);
    } catch {}
  }
}

export class StreamedSource<B> implements WeightSource<B> {
  private readonly gathered: WeightBlock[] = [];

  private constructor(
    readonly backend: Backend<B>,
    private readonly store: WeightStore<B>,
    private readonly entries: Map<string, Entry>,
    readonly report: StreamedLoadReport,
  ) {}

  /**
   * Checks, reserves and streams every tensor of `specs` the checkpoint holds; of a tensor named in `keptRows`, only
   * those rows (rows() must then ask for exactly them).
   */
  static async load<B>(
    checkpoint: SafetensorsCheckpoint,
    backend: Backend<B>,
    store: WeightStore<B>,
    specs: readonly TensorSpec[],
    options: StreamedLoadOptions = {},
    keptRows: ReadonlyMap<string, Int32Array> = new Map(),
  ): Promise<StreamedSource<B>> {
    const started = performance.now();
    const present = specs.filter((spec) => checkpoint.has(spec.name));
    const checked = present.map((spec) =>
      planTensor(spec, checkedStored(checkpoint.info(spec.name), spec), keptRows.get(spec.name)),
    );
    const entries = new Map<string, Entry>();
    const reads: Read[] = [];
    try {
      for (const plan of blockPlans(checked)) {
        const block = reserveNamed(store, plan, entries.size, checked.length);
        for (const { planned, offset } of plan.members) {
          const { spec, stored, shape, keptRows } = planned;
          const entry = { dtype: stored.dtype, shape, keptRows, block, offset, bytes: stored.byteLength, taken: false };
          entries.set(spec.name, entry);
          addReads(reads, planned, entry);
        }
      }
      const reserveSeconds = (performance.now() - started) / 1000;
      const slotBytes = Math.min(options.slotBytes ?? DEFAULT_SLOT_BYTES, widestSpan(reads));
      const slots = store.slots(slotBytes);
      let report: StreamReport;
      try {
        report = await streamTensors(
          reads,
          slots.slots,
          (pieces) => {
            for (const piece of pieces) {
              const { entry, into } = piece.tensor as Read;
              store.write(entry.block, entry.offset + into + piece.tensorOffset, piece.bytes);
            }
            return store.fence();
          },
          options,
        );
      } finally {
        slots.free();
      }
      const seconds = (performance.now() - started) / 1000;
      const summary = { ...report, seconds, reserveSeconds, tensors: checked.length, slotBytes };
      return new StreamedSource(backend, store, entries, summary);
    } catch (error) {
      releaseAll(store, blocksOf(entries.values()));
      throw error;
    }
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  async tensor(name: string): Promise<Tensor<B>> {
    const entry = this.entry(name);
    entry.taken = true;
    return this.store.tensor(entry.block, entry.offset, entry.dtype, entry.shape);
  }

  async rows(name: string, ids: Int32Array): Promise<Tensor<B>> {
    const entry = this.entry(name);
    if (entry.keptRows !== undefined) {
      const same = entry.keptRows.length === ids.length && entry.keptRows.every((id, index) => id === ids[index]);
      if (!same) {
        throw new DramaError('TENSOR_ROWS_NOT_KEPT', `${name} was streamed as other rows than those asked for`, {
          kind: 'internal',
        });
      }
      entry.taken = true;
      return this.store.tensor(entry.block, entry.offset, entry.dtype, entry.shape);
    }
    const [rows, ...rest] = entry.shape;
    const rowBytes = entry.bytes / rows!;
    const outside = ids.find((id) => !Number.isInteger(id) || id < 0 || id >= rows!);
    if (outside !== undefined) throw rowOutOfRange(name, outside, rows!);
    const block = this.store.gatherRows(entry.block, entry.offset, rowBytes, ids, `${name} rows`);
    this.gathered.push(block);
    return this.store.tensor(block, 0, entry.dtype, [ids.length, ...rest]);
  }

  async rowBlocks(name: string, rowShape: readonly number[], blocks: readonly RowBlock[]): Promise<Tensor<B>[]> {
    const entry = this.entry(name);
    requireRowShape(name, entry.shape, rowShape);
    entry.taken = true;
    const rowBytes = entry.bytes / rowShape[0]!;
    return blocks.map(({ first, count }) =>
      this.store.tensor(entry.block, entry.offset + first * rowBytes, entry.dtype, [count, ...rowShape.slice(1)]),
    );
  }

  async linear(name: string): Promise<LinearWeight<B>> {
    const weight = await this.tensor(name);
    if (weight.dtype !== 'e4m3') return weight;
    return { ...weight, scales: await this.tensor(`${name}_scale_inv`) };
  }

  async swiGlu(names: SwiGluNames): Promise<SwiGluWeights<B>> {
    return {
      gate: await this.linear(names.gateProj),
      up: await this.linear(names.upProj),
      down: await this.linear(names.downProj),
    };
  }

  /** Frees the blocks no tensor of the model lies in (e.g. a head whose candidate rows were gathered apart). */
  finish(): void {
    const entries = [...this.entries.values()];
    const held = new Set(entries.filter((entry) => entry.taken).map((entry) => entry.block));
    releaseAll(
      this.store,
      blocksOf(entries).filter((block) => !held.has(block)),
    );
  }

  /** Frees every block (the loaders failed: nothing of this load is kept). */
  release(): void {
    releaseAll(this.store, blocksOf(this.entries.values()).concat(this.gathered.splice(0)));
  }

  private entry(name: string): Entry {
    const entry = this.entries.get(name);
    if (entry === undefined) {
      throw new DramaError('TENSOR_NOT_DECLARED', `tensor ${name} is not in the weight map`, { kind: 'internal' });
    }
    return entry;
  }
}

/** Each block `entries` lie in, once. */
function blocksOf(entries: Iterable<Entry>): WeightBlock[] {
  return [...new Set([...entries].map((entry) => entry.block))];
}

/** Bytes of the longest aligned span one file's tensors cover: a slot longer than that would never fill. */
function widestSpan(tensors: readonly StreamedTensor[]): number {
  let widest = DIRECT_ALIGNMENT;
  for (const list of fileOrder(tensors).values()) {
    const last = list.at(-1)!;
    widest = Math.max(widest, alignUp(last.fileOffset + last.byteLength) - alignDown(list[0]!.fileOffset));
  }
  return widest;
}

function reserveNamed(store: WeightStore<unknown>, plan: BlockPlan, done: number, total: number) {
  try {
    return store.reserve(plan.bytes, `weights ${plan.label}`);
  } catch (error) {
    const reason = isDramaError(error) ? `${error.code}: ${error.message}` : String(error);
    const tensors = plan.members.length === 1 ? '' : `${plan.members.length} tensors, `;
    throw new DramaError(
      'WEIGHTS_ALLOCATION_FAILED',
      `storage for ${plan.label} (${tensors}${plan.bytes} bytes, after ${done} of ${total} tensors) was refused; everything reserved was freed (${reason})`,
      { kind: 'device', param: plan.members[0]!.planned.spec.name, cause: error },
    );
  }
}
