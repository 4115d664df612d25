// Embedding gather and Drama's frame-row formula (MODEL.md §1). table: [V, C] row-major; out: [T, C].
//   gather:    out[t] = table[ids[t]]
//   frame row: out = (textTable[main] + codeTable[codeRow]) / sqrt(2)
// where codeRow is the row of codebook k's code c in the stacked codebook table: c for k = 0, 4096 + (k − 1)·1024 + c
// for k ≥ 1 (see codebookRow).
import type { FloatArray } from '../../../numeric/float-array.ts';
import { RESIDUAL_CODEBOOK_SIZE, SEMANTIC_CODEBOOK_SIZE } from '../../../shared/frame.ts';

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
