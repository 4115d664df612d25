// A deliberately wrong record embedding for the kernel contract: it reads the code of the next codebook (an
// off-by-one column), so frame rows come out from the wrong code table rows. The accuracy gate must catch it.
#include "common.cuh"

extern "C" __global__ void control_embed_records_next_codebook(bf16* out, const bf16* token_table,
                                                               const bf16* code_table, const int* records, int width,
                                                               int codebook, int code_first_row, int rows, int cols,
                                                               int vocab, int code_rows) {
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const int* record = records + row * width;
  const bool text_row = record[1] < 0;
  const int column_code = min(width - 1, 2 + codebook);
  const int code_row = code_first_row + record[column_code];
  const bf16* text = token_table + (long long)record[0] * cols;
  const bf16* code = code_table + (long long)(text_row ? 0 : code_row) * cols;
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    out[row * cols + column] =
        text_row ? text[column] : to_bf16((to_float(text[column]) + to_float(code[column])) * 0.70710678118654752f);
  }
}
