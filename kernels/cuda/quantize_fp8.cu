// Dynamic FP8 (e4m3) activation quantisation per row per 128 columns, the 1×128 activation blocks of the release's
// block-scaled experts (MODEL.md §2; reference quantizeActivationsE4m3 in src/backend/cpu/ops/fp8.ts):
//   amax[t, b]   = max |x[t, c]| over the block's columns (NaN when any of them is NaN)
//   scale[t, b]  = max(amax, 1e-10) / 448, one fp32 division (the floor is fround(1e-10 / 448), formed in double)
//   q[t, c]      = e4m3(x[t, c] / scale): the fp32 quotient rounded to nearest even, saturating to ±448 (±Inf too);
//                  NaN becomes 0x7f whatever its sign
//   x: [T, C] bf16, C contiguous; q: [T, C] uint8 e4m3 bits; scales: [T, ceil(C/128)] fp32, row-major
// One warp per (row, block), four columns per lane. The maximum is exact, so its butterfly order cannot matter; each
// element's rounding is its own: a row's bytes never depend on the other rows.
#include "common.cuh"

#define QUANTIZE_BLOCK 128
#define QUANTIZE_WARPS 4

// The contract's control (kernels/controls/quantize_controls.cu) compiles this file under another name and maximum.
#ifndef QUANTIZE_ENTRY
#define QUANTIZE_ENTRY quantize_e4m3_rows
#define QUANTIZE_MAXIMUM 448.0f
#endif

// Largest magnitude, with NaN winning (fmaxf alone would drop it).
__device__ __forceinline__ float max_or_nan(float a, float b) { return (a != a || b != b) ? a + b : fmaxf(a, b); }

// fp32 → e4m3 bits exactly as float32ToE4m3Bits (src/checkpoint/dtypes.ts) does it, NaN mapped to 0x7f.
__device__ __forceinline__ unsigned e4m3_bits(float value) {
  const unsigned bits = __float_as_uint(value);
  const unsigned sign = (bits >> 24) & 0x80u;
  const unsigned magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return 0x7fu;
  if (magnitude >= 0x43e00000u) return sign | 0x7eu;  // 448 and above, Inf included
  if (magnitude >= 0x3c800000u) {
    // Normal (≥ 2^-6): rebias the exponent (127 → 7), round away the 20 low mantissa bits to nearest even.
    const unsigned rebiased = magnitude - (120u << 23);
    return sign | ((rebiased + 0x7ffffu + ((rebiased >> 20) & 1u)) >> 20);
  }
  // Subnormal, or rounding up to the smallest normal: steps of 2^-9 (the product is exact).
  return sign | static_cast<unsigned>(rintf(fabsf(value) * 512.0f));
}

extern "C" __global__ void __launch_bounds__(QUANTIZE_WARPS * 32)
    QUANTIZE_ENTRY(uint8_t* q, float* scales, const bf16* x, int rows, int cols) {
  KERNEL_PROLOGUE();
  const int lane = threadIdx.x & 31;
  const int blocks = (cols + QUANTIZE_BLOCK - 1) / QUANTIZE_BLOCK;
  const int block = blockIdx.x * QUANTIZE_WARPS + (threadIdx.x >> 5);
  if (block >= blocks) return;
  // Rows past the grid's y limit (65535) are walked in steps of gridDim.y.
  for (long long row = blockIdx.y; row < rows; row += gridDim.y) {
    const bf16* source = x + row * cols;
    float values[QUANTIZE_BLOCK / 32];
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < QUANTIZE_BLOCK / 32; i++) {
      const int column = block * QUANTIZE_BLOCK + i * 32 + lane;
      values[i] = column < cols ? to_float(source[column]) : 0.0f;
      amax = max_or_nan(amax, fabsf(values[i]));
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) amax = max_or_nan(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
    const float floor_scale = static_cast<float>(1e-10 / 448.0);
    float scale;
    if (amax != amax) {
      scale = amax;
    } else if (static_cast<double>(amax) < 1e-10) {
      scale = floor_scale;
    } else {
      scale = __fdiv_rn(amax, QUANTIZE_MAXIMUM);
    }
    uint8_t* target = q + row * cols;
#pragma unroll
    for (int i = 0; i < QUANTIZE_BLOCK / 32; i++) {
      const int column = block * QUANTIZE_BLOCK + i * 32 + lane;
      if (column < cols) target[column] = static_cast<uint8_t>(e4m3_bits(__fdiv_rn(values[i], scale)));
    }
    if (lane == 0) scales[row * blocks + block] = scale;
  }
}
