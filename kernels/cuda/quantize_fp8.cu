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
#define QUANTIZE_CONVERSION_CHECK
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

#ifdef QUANTIZE_CONVERSION_CHECK
// Not run by the backend: test/kernels/e4m3-conversion.test.ts runs it over every float bit pattern from `first`,
// `count` of them, counting where e4m3_bits and e4m3_bits_portable differ and keeping the lowest such pattern.
// `low_operand` is the test's planted fault: the conversion's other operand taken as the value.
extern "C" __global__ void e4m3_conversion_check(unsigned long long* mismatches, unsigned* lowest, unsigned first,
                                                 unsigned long long count, int low_operand) {
  KERNEL_PROLOGUE();
  unsigned long long found = 0;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long index = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; index < count;
       index += stride) {
    const unsigned pattern = first + (unsigned)index;
    const float value = __uint_as_float(pattern);
    unsigned converted = e4m3_bits(value);
    if (low_operand) {
#if __CUDA_ARCH__ >= 890
      unsigned short pair;
      asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(value), "f"(0.0f));
      converted = pair & 0xffu;
#else
      converted = 0;  // the other operand, 0, converted
#endif
    }
    if (converted != e4m3_bits_portable(value)) {
      found++;
      atomicMin(lowest, pattern);
    }
  }
  if (found > 0) atomicAdd(mismatches, found);
}
#endif
