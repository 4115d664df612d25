// Embedding rows: fp32 arithmetic from bf16 tables, one rounding to bf16 at the output.
//   gather:    out[t, :] = table[ids[t], :]
//   frame row: out[t, :] = (text_table[main_ids[t], :] + code_table[code_row_offset + codes[t · code_stride], :])
//              / sqrt(2)   (MODEL.md §1: the backbone input row of a frame; `codes` points at the configured
//              codebook's column of [rows, K] codes, code_row_offset is that codebook's first row in the stacked
//              code table)
//   tables: [vocab, cols] bf16, cols contiguous; ids: [rows] int32; out: [rows, cols] bf16
// An id outside [0, vocab) fills its row with NaN: callers validate ids, and a bad one must not pass silently.
#include "common.cuh"

__device__ __forceinline__ bool in_range(int id, int vocab) { return id >= 0 && id < vocab; }

extern "C" __global__ void embedding_gather_bf16(bf16* out, const bf16* table, const int* ids, int rows, int cols,
                                                 int vocab) {
  KERNEL_PROLOGUE();
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const int id = ids[row];
  const bool valid = in_range(id, vocab);
  const bf16* source = table + (long long)(valid ? id : 0) * cols;
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    out[row * cols + column] = valid ? source[column] : to_bf16(__int_as_float(0x7fc00000));
  }
}

extern "C" __global__ void frame_row_bf16(bf16* out, const bf16* text_table, const bf16* code_table,
                                          const int* main_ids, const int* codes, int rows, int cols, int text_vocab,
                                          int code_table_rows, int code_stride, int code_row_offset) {
  KERNEL_PROLOGUE();
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const int text_id = main_ids[row];
  const int code_id = codes[row * code_stride];
  const bool valid = in_range(text_id, text_vocab) && in_range(code_id, code_table_rows - code_row_offset);
  const bf16* text = text_table + (long long)(valid ? text_id : 0) * cols;
  const bf16* code = code_table + (long long)(valid ? code_row_offset + code_id : 0) * cols;
  const float inverse_sqrt2 = 0.70710678118654752f;
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    const float sum = to_float(text[column]) + to_float(code[column]);
    out[row * cols + column] = to_bf16(valid ? sum * inverse_sqrt2 : __int_as_float(0x7fc00000));
  }
}
