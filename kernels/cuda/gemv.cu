// bf16 GEMV for few-row projections: y[r, n] = Σ_k w[n, k] · x[r, k], fp32 accumulation, one rounding to bf16.
//   w: [out_features, in_features] bf16 row-major (the PyTorch Linear layout); x: [rows, in_features] bf16;
//   y: [rows, out_features] bf16
// Memory-bound: each warp streams one weight row with 16-byte loads, UNROLL of them in flight per lane; grid.y runs
// the input rows (a second row re-reads the weights, from L2 when they fit: this kernel is for one-row decode).
// Each lane sums its chunks in a fixed order and the warp butterfly finishes the sum, so results are
// bit-repeatable. The 16-byte path needs in_features % 8 == 0 and 16-byte aligned pointers; otherwise a scalar
// path runs.
#include "common.cuh"

#define WARPS_PER_BLOCK 4
#define UNROLL 8

__device__ __forceinline__ float dot8(uint4 a, uint4 b) {
  const __nv_bfloat162* pa = reinterpret_cast<const __nv_bfloat162*>(&a);
  const __nv_bfloat162* pb = reinterpret_cast<const __nv_bfloat162*>(&b);
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; i++) {
    const float2 fa = __bfloat1622float2(pa[i]);
    const float2 fb = __bfloat1622float2(pb[i]);
    sum = fmaf(fa.x, fb.x, sum);
    sum = fmaf(fa.y, fb.y, sum);
  }
  return sum;
}

__device__ __forceinline__ float dot_vector(const bf16* w_row, const bf16* x, int in_features, int lane) {
  const uint4* w_chunks = reinterpret_cast<const uint4*>(w_row);
  const uint4* x_chunks = reinterpret_cast<const uint4*>(x);
  const int chunks = in_features / 8;
  float sum = 0.0f;
  for (int base = lane; base < chunks; base += 32 * UNROLL) {
    uint4 weights[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      const int chunk = base + u * 32;
      weights[u] = chunk < chunks ? __ldcs(w_chunks + chunk) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      const int chunk = base + u * 32;
      if (chunk < chunks) sum += dot8(weights[u], __ldg(x_chunks + chunk));
    }
  }
  return sum;
}

__device__ __forceinline__ float dot_scalar(const bf16* w_row, const bf16* x, int in_features, int lane) {
  float sum = 0.0f;
  for (int k = lane; k < in_features; k += 32) sum = fmaf(to_float(w_row[k]), to_float(x[k]), sum);
  return sum;
}

extern "C" __global__ void __launch_bounds__(WARPS_PER_BLOCK * 32)
    gemv_bf16(bf16* y, const bf16* w, const bf16* x, int out_features, int in_features, int rows) {
  const int lane = threadIdx.x & 31;
  const int feature = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
  const int row = blockIdx.y;
  if (feature >= out_features || row >= rows) return;
  const bool aligned = ((reinterpret_cast<uintptr_t>(w) | reinterpret_cast<uintptr_t>(x)) & 15) == 0;
  const bf16* w_row = w + (long long)feature * in_features;
  const bf16* x_row = x + (long long)row * in_features;
  const float partial = aligned && in_features % 8 == 0 ? dot_vector(w_row, x_row, in_features, lane)
                                                        : dot_scalar(w_row, x_row, in_features, lane);
  const float total = warp_sum(partial);
  if (lane == 0) y[(long long)row * out_features + feature] = to_bf16(total);
}
