// Embedding gather and Drama's frame-row formula (MODEL.md §1). table: [V, C] row-major; out: [T, C].
//   gather:    out[t] = table[ids[t]]
//   frame row: out = (textTable[main] + codeTable[codeRow]) / sqrt(2)
// where codeRow is the row of codebook k's code c in the stacked codebook table: c for k = 0, 4096 + (k − 1)·1024 + c
// for k ≥ 1 (see codebookRow).

import type { FloatArray } from '../../../numeric/float-array.ts';
import { type CpuTensor, readFloats, type WideRow, widenToRow } from '../tensors.ts';

export const SEMANTIC_CODEBOOK_SIZE = 4096;
export const RESIDUAL_CODEBOOK_SIZE = 1024;

/** Row of codebook `codebook`'s code `code` in the stacked [4096 + 9·1024, C] codebook embedding table. */
export function codebookRow(codebook: number, code: number): number {
  return codebook === 0 ? code : SEMANTIC_CODEBOOK_SIZE + (codebook - 1) * RESIDUAL_CODEBOOK_SIZE + code;
}

export function embedRows(
  table: FloatArray,
  ids: ArrayLike<number>,
  out: FloatArray,
  rows: number,
  cols: number,
): void {
  for (let t = 0; t < rows; t++) {
    const source = ids[t]! * cols;
    const target = t * cols;
    for (let c = 0; c < cols; c++) out[target + c] = table[source + c]!;
  }
}

/** Writes one frame row at out[outOffset .. outOffset + cols). */
export function frameRow(
  textTable: FloatArray,
  codeTable: FloatArray,
  main: number,
  codeRow: number,
  out: FloatArray,
  outOffset: number,
  cols: number,
): void {
  const text = main * cols;
  const code = codeRow * cols;
  for (let c = 0; c < cols; c++) out[outOffset + c] = (textTable[text + c]! + codeTable[code + c]!) * Math.SQRT1_2;
}

/**
 * Backbone input rows from frame records [T, width] = (token, code[0..K−1]): a text row (code[0] < 0) is
 * tokenTable[token]; a frame row is the frame-row formula with codeTable row codeFirstRow + code[codebook].
 */
export function embedRecords(
  tokenTable: CpuTensor,
  codeTable: CpuTensor,
  records: Int32Array,
  width: number,
  codebook: number,
  codeFirstRow: number,
  out: FloatArray,
  rows: number,
  cols: number,
  scratch: { readonly text: WideRow; readonly code: WideRow },
): void {
  for (let t = 0; t < rows; t++) {
    const token = records[t * width]!;
    const target = t * cols;
    if (records[t * width + 1]! < 0) {
      readFloats(tokenTable, token * cols, cols, out, target, scratch.text);
      continue;
    }
    const text = widenToRow(tokenTable, token * cols, cols, scratch.text);
    const code = widenToRow(codeTable, (codeFirstRow + records[t * width + 1 + codebook]!) * cols, cols, scratch.code);
    frameRow(text, code, 0, 0, out, target, cols);
  }
}

/** out[t] = codeTable[codeFirstRow + records[t][1 + codebook]], or zeros where that code is −1 (masked). */
export function gatherCodeRows(
  codeTable: CpuTensor,
  records: Int32Array,
  width: number,
  codebook: number,
  codeFirstRow: number,
  out: FloatArray,
  rows: number,
  cols: number,
  row: WideRow,
): void {
  for (let t = 0; t < rows; t++) {
    const code = records[t * width + 1 + codebook]!;
    if (code < 0) out.fill(0, t * cols, (t + 1) * cols);
    else readFloats(codeTable, (codeFirstRow + code) * cols, cols, out, t * cols, row);
  }
}
