// Launchers for kernels/cuda/embedding.cu. tables: [vocab, cols] bf16; ids: [rows] int32 (device); out: [rows, cols]
// bf16. An out-of-range id turns its row into NaN (the kernel cannot throw): validate ids before they get here.
import type { CudaContext } from '../context.ts';
import type { DevicePointer } from '../driver.ts';
import { KernelArguments } from '../kernelArguments.ts';
import { type KernelName, type LaunchOptions, launch, requireCount, roundUpToWarp } from './launch.ts';

const EMBEDDING_GATHER_KERNEL: KernelName = { family: 'embedding', name: 'embedding_gather_bf16' };
const FRAME_ROW_KERNEL: KernelName = { family: 'embedding', name: 'frame_row_bf16' };

function shape(rows: number, cols: number) {
  return { grid: [rows, 1, 1], block: [roundUpToWarp(cols, 256), 1, 1] } as const;
}

export function embeddingGather(
  cuda: CudaContext,
  a: { out: DevicePointer; table: DevicePointer; ids: DevicePointer; rows: number; cols: number; vocab: number },
  options: LaunchOptions = {},
): void {
  requireCount(a.rows, 'rows');
  requireCount(a.cols, 'cols');
  requireCount(a.vocab, 'vocab');
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.table)
    .pointer(a.ids)
    .int32(a.rows)
    .int32(a.cols)
    .int32(a.vocab);
  launch(cuda, EMBEDDING_GATHER_KERNEL, shape(a.rows, a.cols), args, options);
}

/**
 * The frame row of MODEL.md §1: out[t] = (textTable[mainIds[t]] + codeTable[codeRowOffset + codes[t·codeStride]])
 * / sqrt(2). `codes` points at the chosen codebook's column of a [rows, K] code array (codeStride = K);
 * codeRowOffset is that codebook's first row in the stacked code table.
 */
export function frameRow(
  cuda: CudaContext,
  a: {
    out: DevicePointer;
    textTable: DevicePointer;
    codeTable: DevicePointer;
    mainIds: DevicePointer;
    codes: DevicePointer;
    rows: number;
    cols: number;
    textVocab: number;
    codeTableRows: number;
    codeStride: number;
    codeRowOffset: number;
  },
  options: LaunchOptions = {},
): void {
  requireCount(a.rows, 'rows');
  requireCount(a.cols, 'cols');
  requireCount(a.codeStride, 'codeStride');
  requireCount(a.codeRowOffset, 'codeRowOffset', 0, a.codeTableRows - 1);
  const args = new KernelArguments()
    .pointer(a.out)
    .pointer(a.textTable)
    .pointer(a.codeTable)
    .pointer(a.mainIds)
    .pointer(a.codes)
    .int32(a.rows)
    .int32(a.cols)
    .int32(a.textVocab)
    .int32(a.codeTableRows)
    .int32(a.codeStride)
    .int32(a.codeRowOffset);
  launch(cuda, FRAME_ROW_KERNEL, shape(a.rows, a.cols), args, options);
}
