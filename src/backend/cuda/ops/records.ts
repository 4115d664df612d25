// Launchers for kernels/cuda/records.cu: frame-record embeddings, code gathers, lane-slot record moves, the residual
// add, column concatenation and the 16-bit fill (the cpu references are in src/backend/cpu/ops/embedding.ts and cpu/backend.ts).
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount, roundUpToWarp } from './launch.ts';

const family = 'records';
const EMBED_RECORDS: KernelName = { family, name: 'embed_records_bf16' };
const GATHER_CODES: KernelName = { family, name: 'gather_codes_bf16' };
const GATHER_SLOT_RECORDS: KernelName = { family, name: 'gather_slot_records' };
const SCATTER_SLOT_RECORDS: KernelName = { family, name: 'scatter_slot_records' };
const ADD: KernelName = { family, name: 'add_bf16' };
const CONCAT_COLUMNS: KernelName = { family, name: 'concat_columns_bf16' };
const FILL_HALF_WORDS: KernelName = { family, name: 'fill_half_words' };
const MAX_ROW_THREADS = 256;
const ELEMENT_THREADS = 256;
const MAX_BLOCKS = 1 << 16;

function rowShape(rows: number, cols: number) {
  return { grid: [rows, 1, 1], block: [roundUpToWarp(cols, MAX_ROW_THREADS), 1, 1] } as const;
}

export interface RecordTables {
  readonly tokenTable: DevicePointer;
  readonly vocab: number;
  readonly codeTable: DevicePointer;
  readonly codeRows: number;
  readonly cols: number;
}

export function embedRecords(
  cuda: CudaContext,
  a: RecordTables & {
    readonly out: DevicePointer;
    readonly records: DevicePointer;
    readonly width: number;
    readonly codebook: number;
    readonly codeFirstRow: number;
    readonly rows: number;
  },
  options: LaunchOptions = {},
): void {
  requireCount(a.rows, 'rows');
  requireCount(a.cols, 'cols');
  requireCount(a.width, 'width', 2);
  requireCount(a.codebook, 'codebook', 0, a.width - 2);
  requireCount(a.codeFirstRow, 'codeFirstRow', 0);
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.tokenTable)
    .pointer(a.codeTable)
    .pointer(a.records)
    .int32(a.width)
    .int32(a.codebook)
    .int32(a.codeFirstRow)
    .int32(a.rows)
    .int32(a.cols)
    .int32(a.vocab)
    .int32(a.codeRows);
  launch(cuda, EMBED_RECORDS, rowShape(a.rows, a.cols), args, options);
}

/** Where a gather reads its code: records[t][1 + codebook] of `width` columns, into table rows from codeFirstRow. */
export function requireCodeColumn(a: {
  readonly width: number;
  readonly codebook: number;
  readonly codeFirstRow: number;
}): void {
  requireCount(a.width, 'width', 2);
  requireCount(a.codebook, 'codebook', 0, a.width - 2);
  requireCount(a.codeFirstRow, 'codeFirstRow', 0);
}

export function gatherCodes(
  cuda: CudaContext,
  a: {
    readonly out: DevicePointer;
    readonly codeTable: DevicePointer;
    readonly codeRows: number;
    readonly records: DevicePointer;
    readonly width: number;
    readonly codebook: number;
    readonly codeFirstRow: number;
    readonly rows: number;
    readonly cols: number;
  },
  options: LaunchOptions = {},
): void {
  requireCount(a.rows, 'rows');
  requireCount(a.cols, 'cols');
  requireCodeColumn(a);
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.codeTable)
    .pointer(a.records)
    .int32(a.width)
    .int32(a.codebook)
    .int32(a.codeFirstRow)
    .int32(a.rows)
    .int32(a.cols)
    .int32(a.codeRows);
  launch(cuda, GATHER_CODES, rowShape(a.rows, a.cols), args, options);
}

/** records[b] ↔ slab[slot of lane b]; `gather` copies slab → records, else records → slab. */
export function moveSlotRecords(
  cuda: CudaContext,
  a: {
    readonly direction: 'gather' | 'scatter';
    readonly records: DevicePointer;
    readonly slab: DevicePointer;
    readonly lanes: DevicePointer;
    readonly laneStride: number;
    readonly width: number;
    readonly batch: number;
  },
  options: LaunchOptions = {},
): void {
  requireCount(a.batch, 'batch');
  requireCount(a.width, 'width');
  requireCount(a.laneStride, 'laneStride');
  const gather = a.direction === 'gather';
  const args = new KernelArguments()
    .pointer(gather ? a.records : a.slab)
    .pointer(gather ? a.slab : a.records)
    .pointer(a.lanes)
    .int32(a.laneStride)
    .int32(a.width)
    .int32(a.batch);
  const shape = { grid: [a.batch, 1, 1], block: [32, 1, 1] } as const;
  launch(cuda, gather ? GATHER_SLOT_RECORDS : SCATTER_SLOT_RECORDS, shape, args, options);
}

export function addInPlace(
  cuda: CudaContext,
  a: { readonly target: DevicePointer; readonly source: DevicePointer; readonly count: number },
  options: LaunchOptions = {},
): void {
  requireCount(a.count, 'count', 1, Number.MAX_SAFE_INTEGER);
  const blocks = Math.min(MAX_BLOCKS, Math.ceil(a.count / ELEMENT_THREADS));
  const args = new KernelArguments().pointer(a.target).pointer(a.source).int64(a.count);
  launch(cuda, ADD, { grid: [blocks, 1, 1], block: [ELEMENT_THREADS, 1, 1] }, args, options);
}

export function concatenateColumns(
  cuda: CudaContext,
  a: {
    readonly out: DevicePointer;
    readonly a: DevicePointer;
    readonly aCols: number;
    readonly b: DevicePointer;
    readonly bCols: number;
    readonly rows: number;
  },
  options: LaunchOptions = {},
): void {
  requireCount(a.rows, 'rows');
  requireCount(a.aCols, 'aCols');
  requireCount(a.bCols, 'bCols');
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.a)
    .int32(a.aCols)
    .pointer(a.b)
    .int32(a.bCols)
    .int32(a.rows);
  launch(cuda, CONCAT_COLUMNS, rowShape(a.rows, a.aCols + a.bCols), args, options);
}

/** Sets `count` 16-bit words from `target` to the bit pattern `value` (a bf16 slot fill). */
export function fillHalfWords(
  cuda: CudaContext,
  a: { readonly target: DevicePointer; readonly value: number; readonly count: number },
  options: LaunchOptions = {},
): void {
  requireCount(a.count, 'count', 1, Number.MAX_SAFE_INTEGER);
  requireCount(a.value, 'value', 0, 0xffff);
  const blocks = Math.min(MAX_BLOCKS, Math.ceil(a.count / ELEMENT_THREADS));
  const args = new KernelArguments().pointer(a.target).uint32(a.value).int64(a.count);
  launch(cuda, FILL_HALF_WORDS, { grid: [blocks, 1, 1], block: [ELEMENT_THREADS, 1, 1] }, args, options);
}
