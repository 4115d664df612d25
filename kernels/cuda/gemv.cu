// bf16 GEMV for few-row projections: y[r, n] = Σ_k w[n, k] · x[r, k], fp32 accumulation, one rounding to bf16.
//   w: [out_features, in_features] bf16 row-major (the PyTorch Linear layout); x: [rows, in_features] bf16;
//   y: [rows, out_features] bf16
// Memory-bound. Grid: a few blocks of 8 warps per multiprocessor, walking the weights in tiles of 8 rows.
//   gemv_staged_bf16 (in_features <= 4096, in_features % 8 == 0, 16-byte aligned): the block copies whole tiles
//     into shared memory with cp.async, `stages` tiles deep, so tens of KB per multiprocessor are always in flight;
//     each warp then dots one row of the landed tile with x
//   gemv_bf16: longer aligned rows take the register path (each warp walks rows with 16-byte loads, the next group
//     of chunks in registers while the current one is multiplied); anything unaligned takes a scalar path
// grid.y runs the input rows (a second row re-reads the weights: this kernel is for one-row decode). With
// programmatic dependent launch the kernel lets the next one start at once and waits for the previous one
// (griddepcontrol.wait) only before it reads x: its first weight tiles are in flight by then. Each lane sums its
// chunks in a fixed order and the warp butterfly finishes, so results are bit-repeatable.
#include "common.cuh"

#define WARPS_PER_BLOCK 8
#define TILE_ROWS WARPS_PER_BLOCK
#define UNROLL 8
#define GROUP_CHUNKS (32 * UNROLL)

__device__ __forceinline__ void copy_async_16(void* shared, const void* global) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(address), "l"(global) : "memory");
}

__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Waits until at most `pending` committed copy groups are still in flight (0 to 2).
__device__ __forceinline__ void wait_copies(int pending) {
  if (pending >= 2) {
    asm volatile("cp.async.wait_group 2;" ::: "memory");
  } else if (pending == 1) {
    asm volatile("cp.async.wait_group 1;" ::: "memory");
  } else {
    asm volatile("cp.async.wait_group 0;" ::: "memory");
  }
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
  wait_for_previous_grids();
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

// Copies tile `tile` (weight rows tile·TILE_ROWS .., clipped to out_features) into `stage`, the whole block helping.
__device__ __forceinline__ void load_tile(uint4* stage, const uint4* w, int tile, int out_features, int chunks) {
  const int first_row = tile * TILE_ROWS;
  const int total = min(TILE_ROWS, out_features - first_row) * chunks;
  const uint4* source = w + (long long)first_row * chunks;
  for (int index = threadIdx.x; index < total; index += blockDim.x) copy_async_16(stage + index, source + index);
}

__device__ void gemv_staged(bf16* y, const bf16* w, const bf16* x, int out_features, int in_features, int stages,
                            int lane) {
  extern __shared__ uint4 staged[];
  const int chunks = in_features / 8;
  const int tiles = (out_features + TILE_ROWS - 1) / TILE_ROWS;
  const int warp = threadIdx.x >> 5;
  const uint4* w_chunks = reinterpret_cast<const uint4*>(w);
  const uint4* x_chunks = reinterpret_cast<const uint4*>(x);
  // Every thread commits one group per tile slot, even an empty one, so the group counts agree everywhere.
  for (int slot = 0; slot < stages - 1; slot++) {
    const int tile = blockIdx.x + slot * gridDim.x;
    if (tile < tiles) load_tile(staged + slot * TILE_ROWS * chunks, w_chunks, tile, out_features, chunks);
    commit_copies();
  }
  // A block past the last tile still waits: a kernel returns only after the previous one is done (common.cuh).
  if (blockIdx.x >= tiles) wait_for_previous_grids();
  for (int step = 0;; step++) {
    const int tile = blockIdx.x + step * gridDim.x;
    if (tile >= tiles) break;
    const int ahead = blockIdx.x + (step + stages - 1) * gridDim.x;
    if (ahead < tiles) {
      load_tile(staged + ((step + stages - 1) % stages) * TILE_ROWS * chunks, w_chunks, ahead, out_features, chunks);
    }
    commit_copies();
    wait_copies(stages - 1);
    __syncthreads();
    // Only now, with `stages` tiles requested, wait for the previous kernel: nothing before this reads x or writes y.
    if (step == 0) wait_for_previous_grids();
    const int feature = tile * TILE_ROWS + warp;
    if (feature < out_features) {
      const uint4* row = staged + ((step % stages) * TILE_ROWS + warp) * chunks;
      float sum = 0.0f;
      for (int chunk = lane; chunk < chunks; chunk += 32) sum += dot8(row[chunk], __ldg(x_chunks + chunk));
      const float total = warp_sum(sum);
      if (lane == 0) y[feature] = to_bf16(total);
    }
    // The stage just read is refilled at the next step.
    __syncthreads();
  }
}

__device__ void gemv_scalar(bf16* y, const bf16* w, const bf16* x, int out_features, int in_features, int warp,
                            int warps, int lane) {
  wait_for_previous_grids();
  for (int feature = warp; feature < out_features; feature += warps) {
    const bf16* w_row = w + (long long)feature * in_features;
    float sum = 0.0f;
    for (int k = lane; k < in_features; k += 32) sum = fmaf(to_float(w_row[k]), to_float(x[k]), sum);
    const float total = warp_sum(sum);
    if (lane == 0) y[feature] = to_bf16(total);
  }
}

// Rows of up to 4096 elements, 16-byte aligned: weight tiles staged through shared memory, `stages` deep.
extern "C" __global__ void __launch_bounds__(WARPS_PER_BLOCK * 32, 3)
    gemv_staged_bf16(bf16* y, const bf16* w, const bf16* x, int out_features, int in_features, int rows, int stages) {
  allow_dependent_launch();
  const int row = blockIdx.y;
  if (row >= rows) {
    wait_for_previous_grids();
    return;
  }
  gemv_staged(y + (long long)row * out_features, w, x + (long long)row * in_features, out_features, in_features,
              stages, threadIdx.x & 31);
}

// Any other shape: the register path for aligned rows, the scalar path otherwise.
extern "C" __global__ void __launch_bounds__(WARPS_PER_BLOCK * 32, 2)
    gemv_bf16(bf16* y, const bf16* w, const bf16* x, int out_features, int in_features, int rows) {
  allow_dependent_launch();
  const int lane = threadIdx.x & 31;
  const int warp = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
  const int warps = gridDim.x * WARPS_PER_BLOCK;
  const int row = blockIdx.y;
  if (row >= rows) {
    wait_for_previous_grids();
    return;
  }
  const bf16* x_row = x + (long long)row * in_features;
  bf16* y_row = y + (long long)row * out_features;
  const bool aligned = ((reinterpret_cast<uintptr_t>(w) | reinterpret_cast<uintptr_t>(x)) & 15) == 0;
  if (aligned && in_features % 8 == 0) {
    gemv_vector(y_row, w, x_row, out_features, in_features, warp, warps, lane);
  } else {
    gemv_scalar(y_row, w, x_row, out_features, in_features, warp, warps, lane);
  }
}
