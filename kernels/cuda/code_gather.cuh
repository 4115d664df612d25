// A frame-record code's row of a codebook table, as the code gathers read it: code = records[row][1 + codebook]; a
// code below 0 is masked (a zero row), one past the table fills the row with NaN (callers validate codes; a bad one
// must not pass silently). gather_codes_bf16 stores these elements; the tower input norms them in place.
#pragma once
#include "common.cuh"

__device__ __forceinline__ bf16 nan_bf16() { return to_bf16(__int_as_float(0x7fc00000)); }

struct CodeRow {
  const bf16* source;
  bool masked;
  bool valid;
};

__device__ __forceinline__ CodeRow code_row(const bf16* table, const int* records, long long row, int width,
                                            int codebook, int code_first_row, int cols, int code_rows) {
  const int code = records[row * width + 1 + codebook];
  const int table_row = code_first_row + code;
  const bool masked = code < 0;
  const bool valid = masked || table_row < code_rows;
  return {table + (long long)(masked || !valid ? 0 : table_row) * cols, masked, valid};
}

// The table is never written while a kernel reads it, so its loads may take the read-only path.
__device__ __forceinline__ bf16 code_element(const CodeRow& row, int column) {
  return row.masked ? to_bf16(0.0f) : row.valid ? __ldg(row.source + column) : nan_bf16();
}
