// Dynamic FP8 (e4m3) activation quantisation per row per 128 columns, the 1×128 activation blocks of the release's
// block-scaled experts (MODEL.md §2; reference quantizeActivationsE4m3 in src/backend/cpu/ops/fp8.ts):
//   amax[t, b]   = max |x[t, c]| over the block's columns (NaN when any of them is NaN)
//   scale[t, b]  = max(amax, 1e-10) / 448, one fp32 division (the floor is fround(1e-10 / 448), formed in double)
//   q[t, c]      = e4m3(x[t, c] / scale): the fp32 quotient rounded to nearest even, saturating to ±448 (±Inf too);
//                  NaN becomes 0x7f whatever its sign
//   x: [T, C] bf16, C contiguous; q: [T, C] uint8 e4m3 bits; scales: [T, ceil(C/128)] fp32, row-major
// One warp per (row, block), four columns per lane. The maximum is exact, so its butterfly order cannot matter; each
// element's rounding is its own: a row's bytes never depend on the other rows.
#include "quantize_fp8.cuh"

#define QUANTIZE_WARPS 4

// The contract's control (kernels/controls/quantize_controls.cu) compiles this file under another name and maximum.
#ifndef QUANTIZE_ENTRY
#define QUANTIZE_ENTRY quantize_e4m3_rows
#define QUANTIZE_MAXIMUM E4M3_MAXIMUM
#endif

extern "C" __global__ void __launch_bounds__(QUANTIZE_WARPS * 32)
    QUANTIZE_ENTRY(uint8_t* q, float* scales, const bf16* x, int rows, int cols) {
  KERNEL_PROLOGUE();
  const int blocks = (cols + QUANTIZE_BLOCK - 1) / QUANTIZE_BLOCK;
  const int block = blockIdx.x * QUANTIZE_WARPS + (threadIdx.x >> 5);
  if (block >= blocks) return;
  // Rows past the grid's y limit (65535) are walked in steps of gridDim.y.
  for (long long row = blockIdx.y; row < rows; row += gridDim.y) {
    quantize_row_block(q, scales, x, row, block, cols, blocks, QUANTIZE_MAXIMUM);
  }
}
