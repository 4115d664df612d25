// The dynamic e4m3 quantisation of one (row, 128-column block) of activations (kernels/cuda/quantize_fp8.cu says what
// it computes): the one definition of its arithmetic, used by quantize_e4m3_rows, by router_top_k_quantize
// (router_quantize.cu) and by moe_down_fp8 (moe_fp8.cuh, into shared memory), so all write the same bytes and scales.
#pragma once
#include "common.cuh"

#define QUANTIZE_BLOCK 128
// The largest finite e4m3fn value: the release's activation scales are amax / 448.
#define E4M3_MAXIMUM 448.0f

// Largest magnitude, with NaN winning (fmaxf alone would drop it).
__device__ __forceinline__ float max_or_nan(float a, float b) { return (a != a || b != b) ? a + b : fmaxf(a, b); }

// fp32 → e4m3 bits exactly as float32ToE4m3Bits (src/numeric/dtypes.ts) does it, NaN mapped to 0x7f: the definition,
// and what a GPU before sm_89 (no e4m3 conversion instruction) runs.
__device__ __forceinline__ unsigned e4m3_bits_portable(float value) {
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

// e4m3_bits_portable's bits in one conversion instruction where the GPU has it (round to nearest even, saturating
// to ±448, Inf included), NaN still 0x7f whatever its sign. test/kernels/e4m3-conversion.test.ts holds the two equal
// on every one of the 2^32 floats.
__device__ __forceinline__ unsigned e4m3_bits(float value) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned short pair;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(value));  // value in the low byte
  return value != value ? 0x7fu : (pair & 0xffu);
#else
  return e4m3_bits_portable(value);
#endif
}

// One warp: the 128 columns of `block` of one row, `source` to `target` (both that row's first column) and the
// block's scale to *scale, four columns per lane. `maximum` is E4M3_MAXIMUM except in the contract's controls
// (kernels/controls/quantize_controls.cu, moe_controls.cu).
__device__ __forceinline__ void quantize_block(uint8_t* target, float* scale_out, const bf16* source, int block,
                                               int cols, float maximum) {
  const int lane = threadIdx.x & 31;
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
    scale = __fdiv_rn(amax, maximum);
  }
#pragma unroll
  for (int i = 0; i < QUANTIZE_BLOCK / 32; i++) {
    const int column = block * QUANTIZE_BLOCK + i * 32 + lane;
    if (column < cols) target[column] = static_cast<uint8_t>(e4m3_bits(__fdiv_rn(values[i], scale)));
  }
  if (lane == 0) *scale_out = scale;
}

// One warp: x[row, 128·block ...] to q and the block's scale to scales[row, block] (row-major [rows, cols] and
// [rows, blocks]).
__device__ __forceinline__ void quantize_row_block(uint8_t* q, float* scales, const bf16* x, long long row, int block,
                                                   int cols, int blocks, float maximum) {
  quantize_block(q + row * cols, scales + row * blocks + block, x + row * cols, block, cols, maximum);
}
