// bf16 GEMV for few-row projections: y[r, n] = Σ_k w[n, k] · x[r, k], fp32 accumulation, one rounding to bf16.
//   w: [out_features, in_features] bf16 row-major (the PyTorch Linear layout); x: [rows, in_features] bf16;
//   y: [rows, out_features] bf16
// Memory-bound: a grid of about one block per multiprocessor whose warps walk the output features (one weight row
// per warp at a time, 16-byte loads, UNROLL per lane), loading the next row's group of chunks while the current one
// is multiplied, so the memory pipe never drains between rows. grid.y runs the input rows (a second row re-reads the
// weights: this kernel is for one-row decode). Launched with programmatic dependent launch, the kernel lets the next
// kernel start at once and waits for the previous one (griddepcontrol) only before it reads x: the first weights
// are already in flight by then. Each lane sums its chunks in a fixed order and the warp butterfly finishes the
// sum, so results are bit-repeatable. The 16-byte path needs in_features % 8 == 0 and 16-byte aligned pointers;
// otherwise a scalar path runs.
#include "common.cuh"

#define WARPS_PER_BLOCK 8
#define UNROLL 8
#define GROUP_CHUNKS (32 * UNROLL)

__device__ __forceinline__ void allow_dependent_launch() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void wait_for_previous_grid() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

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

// Loads group `group` of a weight row: chunks group·GROUP_CHUNKS + u·32 + lane, zero past the row's end.
__device__ __forceinline__ void load_group(uint4 (&weights)[UNROLL], const uint4* row, int group, int chunks,
                                           int lane) {
#pragma unroll
  for (int u = 0; u < UNROLL; u++) {
    const int chunk = group * GROUP_CHUNKS + u * 32 + lane;
    weights[u] = chunk < chunks ? __ldcs(row + chunk) : make_uint4(0, 0, 0, 0);
  }
}

__device__ void gemv_vector(bf16* y, const bf16* w, const bf16* x, int out_features, int in_features, int warp,
                            int warps, int lane) {
  const int chunks = in_features / 8;
  const int groups = (chunks + GROUP_CHUNKS - 1) / GROUP_CHUNKS;
  const uint4* x_chunks = reinterpret_cast<const uint4*>(x);
  int feature = warp;
  int group = 0;
  uint4 next[UNROLL];
  if (feature < out_features) load_group(next, reinterpret_cast<const uint4*>(w) + (long long)feature * chunks, 0, chunks, lane);
  wait_for_previous_grid();
  float sum = 0.0f;
  while (feature < out_features) {
    uint4 current[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) current[u] = next[u];
    const int current_feature = feature;
    const int current_group = group;
    if (++group == groups) {
      group = 0;
      feature += warps;
    }
    if (feature < out_features) {
      load_group(next, reinterpret_cast<const uint4*>(w) + (long long)feature * chunks, group, chunks, lane);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      const int chunk = current_group * GROUP_CHUNKS + u * 32 + lane;
      if (chunk < chunks) sum += dot8(current[u], __ldg(x_chunks + chunk));
    }
    if (current_group == groups - 1) {
      const float total = warp_sum(sum);
      if (lane == 0) y[current_feature] = to_bf16(total);
      sum = 0.0f;
    }
  }
}

__device__ void gemv_scalar(bf16* y, const bf16* w, const bf16* x, int out_features, int in_features, int warp,
                            int warps, int lane) {
  wait_for_previous_grid();
  for (int feature = warp; feature < out_features; feature += warps) {
    const bf16* w_row = w + (long long)feature * in_features;
    float sum = 0.0f;
    for (int k = lane; k < in_features; k += 32) sum = fmaf(to_float(w_row[k]), to_float(x[k]), sum);
    const float total = warp_sum(sum);
    if (lane == 0) y[feature] = to_bf16(total);
  }
}

extern "C" __global__ void __launch_bounds__(WARPS_PER_BLOCK * 32, 1)
    gemv_bf16(bf16* y, const bf16* w, const bf16* x, int out_features, int in_features, int rows) {
  allow_dependent_launch();
  const int lane = threadIdx.x & 31;
  const int warp = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
  const int warps = gridDim.x * WARPS_PER_BLOCK;
  const int row = blockIdx.y;
  if (row >= rows) return;
  const bf16* x_row = x + (long long)row * in_features;
  bf16* y_row = y + (long long)row * out_features;
  const bool aligned = ((reinterpret_cast<uintptr_t>(w) | reinterpret_cast<uintptr_t>(x)) & 15) == 0;
  if (aligned && in_features % 8 == 0) {
    gemv_vector(y_row, w, x_row, out_features, in_features, warp, warps, lane);
  } else {
    gemv_scalar(y_row, w, x_row, out_features, in_features, warp, warps, lane);
  }
}
