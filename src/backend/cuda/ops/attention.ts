// Launchers for kernels/cuda/attention.cu (its header has the formulas, layouts, rounding points and the fixed
// reduction order). rowTable: [rows, 2] int32 (slot, position) on the device; keys, values: [slots, capacity,
// kvHeads, headDim] bf16 slabs. Calls of at most 64 rows run the per-row kernel (each row's splits spread over
// blocks, folded by the combine kernel; calls of at most 4 rows at head dim 128 or 256 in a few-rows kernel, four
// warps a query head, whose shared form also holds per-row blocks for the calls with many splits); larger calls run
// the grouped kernel (4 rows a block, the rows of one slot sharing every staged tile, the splits folded on chip), or,
// asked for, the per-row kernel folding on chip (one row a block). All give the same bits for every row.
import { DramaError } from '../../../errors.ts';
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount, roundUpToWarp } from './launch.ts';
import { allowShared } from './sharedLimit.ts';

/** Keys per split (kernels/cuda/attention.cuh ATTENTION_SPLIT_KEYS): split points are these absolute positions. */
export const ATTENTION_SPLIT_KEYS = 256;
/** Calls of at most this many rows spread a row's splits over blocks and fold them in a second kernel. */
const MOST_ROWS_SPREAD = 64;
const HEAD_DIMS = [64, 128, 256] as const;
/** Keys per tile (ATTENTION_TILE_KEYS): a K tile and a V tile of this many slab rows sit in shared memory. */
const TILE_KEYS = 64;
/** Rows per block of the grouped kernel (ATTENTION_ROWS_PER_BLOCK). */
export const ATTENTION_ROWS_PER_BLOCK = 4;
/** Query heads one key head may serve: a block is one warp per query head, at most 256 threads (the kernels' bound). */
export const ATTENTION_MOST_GROUP = 8;
/**
 * Decode calls of at most this many rows (kernels/cuda/attention.cuh ATTENTION_FEW_ROWS) at head dim 128 or 256 run
 * attention_few_rows_bf16_d*: four warps a query head, the same bits. A block of it holds at most 2 heads (256
 * threads); with many blocks to run (more rows, long contexts) fewer of its blocks fit an SM and a warp a head is
 * faster (docs/gpu.md).
 */
export const FEW_ROWS_MOST_ROWS = 4;
/**
 * ... while the per-row walk would have at most this many blocks of work: the splits the call's rows reach times the KV
 * heads (ATTENTION_FEW_ROWS_MOST_BLOCKS). Where the slab can hold more, attention_few_rows_shared_bf16_d* runs (fold =
 * 2): its grid also holds the per-row walk's blocks, which take the calls past it: long contexts, where those blocks
 * fill the SMs (docs/gpu.md).
 */
export const FEW_ROWS_MOST_BLOCKS = 128;
/** fold = 2 (ATTENTION_FOLD_SHARED): a few-rows launch holding the per-row walk's blocks too, each walk its calls. */
const FOLD_SHARED = 2;
const FEW_ROWS_HEAD_THREADS = 128;
const FEW_ROWS_MOST_HEADS = 2;
/** Floats a few-rows block exchanges a head: a tile's probabilities and each warp's maximum (FEW_ROWS_EXCHANGE). */
const FEW_ROWS_EXCHANGE_FLOATS = TILE_KEYS + 4;
/**
 * Blocks a spread call aims for: a row's splits are dealt to min(splits, ceil(this / (rows · kvHeads))) blocks, block z
 * walking splits z, z + Z, ..., fixed by the row count and the capacity alone, as a captured step's replays need.
 */
// 2048: batch 1 over 2 KV heads gets a block per split up to 262144 keys, batch 64 a few blocks a row, not thousands.
const SPREAD_BLOCKS = 2048;

const PREPARE_KERNEL: KernelName = { family: 'attention', name: 'attention_prepare_bf16' };

export interface AttentionGeometryArguments {
  readonly queryHeads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly slots: number;
  readonly capacity: number;
}

export interface AttentionPrepareArguments extends AttentionGeometryArguments {
  readonly qOut: DevicePointer;
  readonly keys: DevicePointer;
  readonly values: DevicePointer;
  /** [rows, queryHeads, 2·headDim] per head [query | gate] when gated, else [rows, queryHeads, headDim]. */
  readonly qProj: DevicePointer;
  readonly kProj: DevicePointer;
  readonly vProj: DevicePointer;
  readonly qNorm: DevicePointer;
  readonly kNorm: DevicePointer;
  readonly rowTable: DevicePointer;
  readonly rows: number;
  readonly rotaryDims: number;
  readonly theta: number;
  readonly style: 'neox' | 'interleaved';
  readonly gated: boolean;
  readonly eps: number;
}

export interface AttentionArguments extends AttentionGeometryArguments {
  readonly out: DevicePointer;
  readonly q: DevicePointer;
  /** The gate of head h of row t at gate + t·gateRowStride + h·gateHeadStride (elements); undefined: no gate. */
  readonly gate?: DevicePointer;
  readonly gateRowStride?: number;
  readonly gateHeadStride?: number;
  readonly keys: DevicePointer;
  readonly values: DevicePointer;
  readonly rowTable: DevicePointer;
  readonly rows: number;
  /** At least attentionWorkspaceBytes(...) bytes; used by calls of at most 64 rows. */
  readonly workspace: DevicePointer;
  /**
   * Calls of more than 64 rows: 4 (the default) runs the grouped kernel, 1 the per-row kernel folding on chip, one
   * row a block. The same bits either way; the bench compares their speed.
   */
  readonly rowsPerBlock?: 1 | 4;
  /**
   * Calls of at most 64 rows: the query heads a block walks, a divisor of the group (the default: the whole group, a
   * block per KV head; a few-rows call at most 2). Fewer spread a KV head's heads over more blocks, each staging the
   * same tiles. The same bits.
   */
  readonly headsPerBlock?: number;
}

function checkGeometry(a: AttentionGeometryArguments): void {
  requireCount(a.kvHeads, 'kvHeads');
  requireCount(a.queryHeads, 'queryHeads', a.kvHeads);
  const group = a.queryHeads / a.kvHeads;
  if (!Number.isInteger(group) || group > ATTENTION_MOST_GROUP) {
    requireCount(group, `queryHeads / kvHeads (an integer ≤ ${ATTENTION_MOST_GROUP})`, 1, ATTENTION_MOST_GROUP);
  }
  requireCount(a.slots, 'slots');
  requireCount(a.capacity, 'capacity');
  requireCount(a.slots * a.capacity * a.kvHeads * a.headDim, 'slab elements', 1, 2 ** 53);
}

function splitsFor(capacity: number): number {
  return Math.ceil(capacity / ATTENTION_SPLIT_KEYS);
}

/** The grid's z extent of a spread call: the blocks a row's splits are dealt to. */
export function attentionSpreadBlocks(rows: number, kvHeads: number, capacity: number): number {
  return Math.min(splitsFor(capacity), Math.max(1, Math.ceil(SPREAD_BLOCKS / (rows * kvHeads))));
}

/** Whether a few-rows call's rows may reach more splits than the few-rows walk takes (its slab holds them). */
export function fewRowsMayLeave(rows: number, kvHeads: number, capacity: number): boolean {
  return rows * splitsFor(capacity) * kvHeads > FEW_ROWS_MOST_BLOCKS;
}

/** Dynamic shared memory of a few-rows block of `heads` query heads: the K and V tiles, then the heads' exchange. */
export function attentionFewRowsSharedBytes(headDim: number, heads: number): number {
  return 2 * TILE_KEYS * headDim * 2 + heads * FEW_ROWS_EXCHANGE_FLOATS * 4;
}

/** The largest divisor of the group not above `most`: each block a whole number of a KV head's heads. */
function headsDividing(group: number, most: number): number {
  for (let heads = Math.min(most, group); heads > 1; heads--) {
    if (group % heads === 0) return heads;
  }
  return 1;
}

/** Dynamic shared memory of one block: the K and V tiles, then the fold states of `foldRows` rows (0: spread). */
export function attentionSharedBytes(foldRows: number, headDim: number, group: number): number {
  const tiles = 2 * TILE_KEYS * headDim * 2;
  return tiles + foldRows * (headDim / 32 + 2) * 32 * group * 4;
}

/** Bytes of fp32 partial states a call of `rows` rows needs (0 when its rows fold on chip). */
export function attentionWorkspaceBytes(rows: number, a: AttentionGeometryArguments): number {
  if (rows > MOST_ROWS_SPREAD) return 0;
  return rows * a.queryHeads * splitsFor(a.capacity) * (a.headDim + 2) * 4;
}

/** The prepare's arguments without its inputs (the projections), checked: what the fused combine + prepare shares. */
export type PrepareOutputs = Omit<AttentionPrepareArguments, 'qProj' | 'kProj' | 'vProj'>;

/** Refuses a prepare the kernels cannot run, naming the value. */
export function checkPrepare(a: PrepareOutputs): void {
  checkGeometry(a);
  requireCount(a.rows, 'rows');
  requireCount(a.headDim, 'headDim', 2, 256);
  requireCount(a.rotaryDims, 'rotaryDims', 2, a.headDim);
  if (a.rotaryDims % 2 !== 0) requireCount(a.rotaryDims, 'rotaryDims (even)', a.rotaryDims + 1);
  requireCount(a.rows * (a.queryHeads + a.kvHeads), 'rows·heads');
}

/** The prepare's norm weights, row table and scalars, in the kernels' order after their tensor pointers. */
export function appendPrepareScalars(args: KernelArguments, a: PrepareOutputs): KernelArguments {
  return args
    .pointer(a.qNorm)
    .pointer(a.kNorm)
    .pointer(a.rowTable)
    .int32(a.rows)
    .int32(a.queryHeads)
    .int32(a.kvHeads)
    .int32(a.headDim)
    .int32(a.rotaryDims)
    .float32(a.theta)
    .int32(a.style === 'interleaved' ? 1 : 0)
    .int32(a.gated ? 1 : 0)
    .int32(a.slots)
    .int32(a.capacity)
    .float32(a.eps);
}

export function attentionPrepare(cuda: CudaContext, a: AttentionPrepareArguments, options: LaunchOptions = {}): void {
  checkPrepare(a);
  const tensors = new KernelArguments(20)
    .pointer(a.qOut)
    .pointer(a.keys)
    .pointer(a.values)
    .pointer(a.qProj)
    .pointer(a.kProj)
    .pointer(a.vProj);
  // The block size of rms_norm_bf16 over headDim columns, so the norm sums in its order.
  const threads = roundUpToWarp(Math.ceil(a.headDim / 4));
  launch(
    cuda,
    PREPARE_KERNEL,
    { grid: [a.rows * (a.queryHeads + a.kvHeads), 1, 1], block: [threads, 1, 1] },
    appendPrepareScalars(tensors, a),
    options,
  );
}

/**
 * Causal GQA attention of each row over its slot's keys 0..position. Calls of at most 64 rows spread each row's
 * splits over blocks and fold them with attention_combine; larger calls run the grouped kernel, which folds on chip.
 * options.kernel replaces the first kernel of either (the controls dispatch on `fold`). Both give the same bits.
 */
export function attention(cuda: CudaContext, a: AttentionArguments, options: LaunchOptions = {}): void {
  checkGeometry(a);
  requireCount(a.rows, 'rows', 1, 2 ** 31 - 1 - ATTENTION_ROWS_PER_BLOCK);
  if (!(HEAD_DIMS as readonly number[]).includes(a.headDim))
    requireCount(a.headDim, 'headDim (64, 128 or 256)', 256, 256);
  const gated = a.gate !== undefined;
  const gateHeadStride = a.gateHeadStride ?? a.headDim;
  const gateRowStride = a.gateRowStride ?? a.queryHeads * gateHeadStride;
  const maxSplits = splitsFor(a.capacity);
  requireCount(maxSplits, `capacity / ${ATTENTION_SPLIT_KEYS} (splits in a grid dimension)`, 1, 65535);
  const spread = a.rows <= MOST_ROWS_SPREAD;
  if (spread && a.workspace === 0n) {
    throw new DramaError('KERNEL_ARGUMENT_INVALID', `a call of ${a.rows} rows needs a workspace`, {
      kind: 'internal',
      param: 'workspace',
    });
  }
  if (a.rowsPerBlock !== undefined && a.rowsPerBlock !== 1 && a.rowsPerBlock !== ATTENTION_ROWS_PER_BLOCK) {
    throw new DramaError('KERNEL_ARGUMENT_INVALID', `rowsPerBlock must be 1 or 4, not ${a.rowsPerBlock}`, {
      kind: 'internal',
      param: 'rowsPerBlock',
    });
  }
  const group = a.queryHeads / a.kvHeads;
  const headsPerBlock = spread ? (a.headsPerBlock ?? group) : group;
  if (!Number.isInteger(headsPerBlock) || headsPerBlock < 1 || group % headsPerBlock !== 0) {
    throw new DramaError(
      'KERNEL_ARGUMENT_INVALID',
      `headsPerBlock must divide the group of ${group} query heads, not ${a.headsPerBlock}`,
      { kind: 'internal', param: 'headsPerBlock' },
    );
  }
  const fewRows = spread && a.rows <= FEW_ROWS_MOST_ROWS && a.headDim >= 128;
  const blockHeads = fewRows ? headsDividing(group, Math.min(headsPerBlock, FEW_ROWS_MOST_HEADS)) : headsPerBlock;
  const block: [number, number, number] = [(fewRows ? FEW_ROWS_HEAD_THREADS : 32) * blockHeads, 1, 1];
  const rowsPerBlock = spread ? 1 : (a.rowsPerBlock ?? ATTENTION_ROWS_PER_BLOCK);
  // A shared few-rows call's grid starts with a per-row block (a warp a head) for each KV head: its block is the same
  // size only where the group is 4 few-rows heads; elsewhere the few-rows walk takes every call.
  const shared = fewRows && 32 * group === block[0] && fewRowsMayLeave(a.rows, a.kvHeads, a.capacity);
  const args = new KernelArguments(17)
    .pointer(a.out)
    .pointer(a.workspace)
    .pointer(a.q)
    .pointer(a.gate ?? 0n)
    .int64(gated ? gateRowStride : 0)
    .int64(gated ? gateHeadStride : 0)
    .pointer(a.keys)
    .pointer(a.values)
    .pointer(a.rowTable)
    .int32(a.rows)
    .int32(a.queryHeads)
    .int32(a.kvHeads)
    .int32(a.slots)
    .int32(a.capacity)
    .int32(maxSplits)
    .float32(1 / Math.sqrt(a.headDim))
    .int32(shared ? FOLD_SHARED : spread ? 0 : 1);
  const fewRowsWalk = shared ? 'attention_few_rows_shared' : 'attention_few_rows';
  const walk = fewRows ? fewRowsWalk : rowsPerBlock === 1 ? 'attention' : 'attention_grouped';
  const main: KernelName = { family: 'attention', name: `${walk}_bf16_d${a.headDim}` };
  const grid: [number, number, number] = spread
    ? [
        a.rows,
        (shared ? a.kvHeads : 0) + a.kvHeads * (group / blockHeads),
        attentionSpreadBlocks(a.rows, a.kvHeads, a.capacity),
      ]
    : [Math.ceil(a.rows / rowsPerBlock), a.kvHeads, 1];
  const sharedBytes = fewRows
    ? attentionFewRowsSharedBytes(a.headDim, blockHeads)
    : attentionSharedBytes(spread ? 0 : rowsPerBlock, a.headDim, group);
  allowShared(cuda, main, options, sharedBytes);
  launch(cuda, main, { grid, block, sharedBytes }, args, options);
  if (!spread) return;
  const combineArgs = new KernelArguments(12)
    .pointer(a.out)
    .pointer(a.workspace)
    .pointer(a.gate ?? 0n)
    .int64(gated ? gateRowStride : 0)
    .int64(gated ? gateHeadStride : 0)
    .pointer(a.rowTable)
    .int32(a.rows)
    .int32(a.queryHeads)
    .int32(a.kvHeads)
    .int32(a.slots)
    .int32(a.capacity)
    .int32(maxSplits);
  const combine: KernelName = { family: 'attention', name: `attention_combine_bf16_d${a.headDim}` };
  launch(cuda, combine, { grid: [a.rows, a.kvHeads, 1], block: [32 * group, 1, 1] }, combineArgs, {
    ...(options.stream === undefined ? {} : { stream: options.stream }),
  });
}
