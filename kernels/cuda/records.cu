// The frame step's small data-movement kernels over frame records and lane slots (no reductions: each output element
// is one rounding of at most one fp32 sum, so they are batch-invariant by construction).
//   records: int32 [T, width] = (token, code[0..K−1]); a record with code[0] < 0 is a text row
//   embed_records: out[t] = token_table[token] (text row), else
//                  (token_table[token] + code_table[code_first_row + code[codebook]]) · (1/√2), rounded once
//   gather_codes:  out[t] = code_table[code_first_row + code[codebook]], zeros where that code is −1
//   gather/scatter_slot_records: records[b] ↔ slab[lanes[b · lane_stride].slot] (int32 rows of `width`)
//   add:           target = bf16(target + source)
//   concat_columns: out[t] = [a[t] | b[t]]
//   fill_half_words: out[i] = value for i < count, 16-bit words (a bf16 or f16 fill; 32-bit fills use cuMemsetD32)
// tables: bf16 [rows, cols], cols contiguous; activations bf16 [T, cols]. A token or code outside its table fills the
// row with NaN (callers validate ids; a bad one must not pass silently). Outputs never overlap inputs (the gathers'
// and the concatenation's pointers are restrict, so a row's loads can be in flight together).
#include "code_gather.cuh"

extern "C" __global__ void embed_records_bf16(bf16* out, const bf16* token_table, const bf16* code_table,
                                              const int* records, int width, int codebook, int code_first_row,
                                              int rows, int cols, int vocab, int code_rows) {
  KERNEL_PROLOGUE();
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const int* record = records + row * width;
  const int token = record[0];
  const bool text_row = record[1] < 0;
  const int code_row = code_first_row + record[1 + codebook];
  const bool valid = token >= 0 && token < vocab && (text_row || (code_row >= 0 && code_row < code_rows));
  const bf16* text = token_table + (long long)(valid ? token : 0) * cols;
  const bf16* code = code_table + (long long)(valid && !text_row ? code_row : 0) * cols;
  const float inverse_sqrt2 = 0.70710678118654752f;
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    bf16 value;
    if (!valid) value = nan_bf16();
    else if (text_row) value = text[column];
    else value = to_bf16((to_float(text[column]) + to_float(code[column])) * inverse_sqrt2);
    out[row * cols + column] = value;
  }
}

extern "C" __global__ void gather_codes_bf16(bf16* __restrict__ out, const bf16* __restrict__ code_table,
                                             const int* __restrict__ records, int width,
                                             int codebook, int code_first_row, int rows, int cols, int code_rows) {
  KERNEL_PROLOGUE();
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const CodeRow code = code_row(code_table, records, row, width, codebook, code_first_row, cols, code_rows);
#pragma unroll 4
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    out[row * cols + column] = code_element(code, column);
  }
}

extern "C" __global__ void gather_slot_records(int* records, const int* slab, const int* lanes, int lane_stride,
                                               int width, int batch) {
  KERNEL_PROLOGUE();
  const int b = blockIdx.x;
  if (b >= batch) return;
  const long long slot = lanes[(long long)b * lane_stride];
  for (int i = threadIdx.x; i < width; i += blockDim.x) records[(long long)b * width + i] = slab[slot * width + i];
}

extern "C" __global__ void scatter_slot_records(int* slab, const int* records, const int* lanes, int lane_stride,
                                                int width, int batch) {
  KERNEL_PROLOGUE();
  const int b = blockIdx.x;
  if (b >= batch) return;
  const long long slot = lanes[(long long)b * lane_stride];
  for (int i = threadIdx.x; i < width; i += blockDim.x) slab[slot * width + i] = records[(long long)b * width + i];
}

extern "C" __global__ void add_bf16(bf16* target, const bf16* source, long long count) {
  KERNEL_PROLOGUE();
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x)
    target[i] = to_bf16(to_float(target[i]) + to_float(source[i]));
}

extern "C" __global__ void concat_columns_bf16(bf16* __restrict__ out, const bf16* __restrict__ a, int a_cols,
                                               const bf16* __restrict__ b, int b_cols, int rows) {
  KERNEL_PROLOGUE();
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const int width = a_cols + b_cols;
#pragma unroll 4
  for (int column = threadIdx.x; column < width; column += blockDim.x) {
    out[row * width + column] = column < a_cols ? a[row * a_cols + column] : b[row * b_cols + column - a_cols];
  }
}

extern "C" __global__ void fill_half_words(uint16_t* out, unsigned int value, long long count) {
  KERNEL_PROLOGUE();
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x)
    out[i] = (uint16_t)value;
}
