// A deliberately wrong record embedding for the kernel contract: it reads the code of the next codebook (an
// off-by-one column), so frame rows come out from the wrong code table rows. The accuracy gate must catch it.
#include "common.cuh"

extern "C" __global__ void control_embed_records_next_codebook(bf16* out, const bf16* token_table,
                                                               const bf16* code_table, const int* records, int width,
                                                               int codebook, int code_first_row, int rows, int cols,
                                                               int vocab, int code_rows) {
  KERNEL_PROLOGUE();
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

// A code gather that does not mask: a code of −1 reads the table row before the codebook's first row instead of
// writing zeros (text rows would embed a neighbour codebook's last code). The accuracy gate must catch it.
extern "C" __global__ void control_gather_codes_unmasked(bf16* out, const bf16* code_table, const int* records,
                                                         int width, int codebook, int code_first_row, int rows,
                                                         int cols, int code_rows) {
  KERNEL_PROLOGUE();
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const int code_row = max(0, min(code_rows - 1, code_first_row + records[row * width + 1 + codebook]));
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    out[row * cols + column] = code_table[(long long)code_row * cols + column];
  }
}

// A slot-record move that skips the batch's last lane (its row is never copied). The written gate (gather) and the
// exact gate (scatter, whose target holds the old slab) must catch it.
extern "C" __global__ void control_slot_records_skip_last_lane(int* records, const int* slab, const int* lanes,
                                                               int lane_stride, int width, int batch) {
  KERNEL_PROLOGUE();
  const int b = blockIdx.x;
  if (b >= batch - 1) return;
  const long long slot = lanes[(long long)b * lane_stride];
  for (int i = threadIdx.x; i < width; i += blockDim.x) records[(long long)b * width + i] = slab[slot * width + i];
}

// A residual add that never adds the last element (it keeps the target's old value there). The accuracy gate must
// catch it (the output is not poisoned: the target held its input).
extern "C" __global__ void control_add_skips_last(bf16* target, const bf16* source, long long count) {
  KERNEL_PROLOGUE();
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count - 1;
       i += (long long)gridDim.x * blockDim.x)
    target[i] = to_bf16(to_float(target[i]) + to_float(source[i]));
}

// A column concatenation whose second part starts one column late (it reads b one column ahead). The exact gate
// must catch it.
extern "C" __global__ void control_concat_columns_off_by_one(bf16* out, const bf16* a, int a_cols, const bf16* b,
                                                             int b_cols, int rows) {
  KERNEL_PROLOGUE();
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const int width = a_cols + b_cols;
  for (int column = threadIdx.x; column < width; column += blockDim.x) {
    const int from_b = min(b_cols - 1, column - a_cols + 1);
    out[row * width + column] = column < a_cols ? a[row * a_cols + column] : b[row * b_cols + from_b];
  }
}
