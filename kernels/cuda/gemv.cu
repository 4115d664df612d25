// bf16 GEMV for few-row projections: y[r, n] = Σ_k w[n, k] · x[r, k], fp32 accumulation, one rounding to bf16.
//   w: [out_features, in_features] bf16 row-major (the PyTorch Linear layout); x: [rows, in_features] bf16;
//   y: [rows, out_features] bf16
// Memory-bound. A few blocks of 8 warps per multiprocessor walk the weights in tiles of 8 rows × up to 2048
// columns (32 KiB); a row longer than 2048 is several consecutive tiles (segments) of the same 8 rows.
//   gemv_bf16 (in_features % 8 == 0, 16-byte aligned): the block copies tiles into shared memory with cp.async,
//     `stages` tiles deep, so tens of KiB per multiprocessor are always in flight; each warp dots one row of the
//     landed tile with x and carries its sum across the row's segments
//   gemv_unaligned_bf16: anything else, one warp per row with scalar loads
// grid.y runs the input rows (a second row re-reads the weights: this kernel is for one-row decode). With
// programmatic dependent launch the kernel lets the next one start at once and waits for the previous one
// (griddepcontrol.wait) only before it reads x: its first weight tiles are in flight by then. Each lane sums its
// chunks in ascending order and the warp butterfly finishes, so results are bit-repeatable.
#include "common.cuh"

#define WARPS_PER_BLOCK 8
#define TILE_ROWS WARPS_PER_BLOCK
#define SEGMENT_CHUNKS 256

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

// Which tile a block's step-th item is: row group blockIdx.x + (step / segments)·gridDim.x, segment step % segments.
struct Item {
  int group;
  int segment;
};

__device__ __forceinline__ Item item_at(int step, int segments) {
  return {(int)blockIdx.x + (step / segments) * (int)gridDim.x, step % segments};
}

// Copies tile (group, segment) into `stage`, row r of the tile at stage + r·SEGMENT_CHUNKS, the whole block helping.
__device__ __forceinline__ void load_tile(uint4* stage, const uint4* w, Item item, int out_features, int chunks) {
  const int first_row = item.group * TILE_ROWS;
  const int rows_here = min(TILE_ROWS, out_features - first_row);
  const int first_chunk = item.segment * SEGMENT_CHUNKS;
  const int width = min(SEGMENT_CHUNKS, chunks - first_chunk);
  for (int row = 0; row < rows_here; row++) {
    const uint4* source = w + (long long)(first_row + row) * chunks + first_chunk;
    for (int chunk = threadIdx.x; chunk < width; chunk += blockDim.x) {
      copy_async_16(stage + row * SEGMENT_CHUNKS + chunk, source + chunk);
    }
  }
}

__device__ void gemv_staged(bf16* y, const bf16* w, const bf16* x, int out_features, int in_features, int stages) {
  extern __shared__ uint4 staged[];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int chunks = in_features / 8;
  const int segments = (chunks + SEGMENT_CHUNKS - 1) / SEGMENT_CHUNKS;
  const int groups = (out_features + TILE_ROWS - 1) / TILE_ROWS;
  const uint4* w_chunks = reinterpret_cast<const uint4*>(w);
  const uint4* x_chunks = reinterpret_cast<const uint4*>(x);
  const int stage_chunks = TILE_ROWS * SEGMENT_CHUNKS;
  // Every thread commits one group per item slot, even an empty one, so the group counts agree everywhere.
  for (int slot = 0; slot < stages - 1; slot++) {
    const Item item = item_at(slot, segments);
    if (item.group < groups) load_tile(staged + slot * stage_chunks, w_chunks, item, out_features, chunks);
    commit_copies();
  }
  wait_for_previous_grid();
  float sum = 0.0f;
  for (int step = 0;; step++) {
    const Item item = item_at(step, segments);
    if (item.group >= groups) break;
    const Item ahead = item_at(step + stages - 1, segments);
    if (ahead.group < groups) {
      load_tile(staged + ((step + stages - 1) % stages) * stage_chunks, w_chunks, ahead, out_features, chunks);
    }
    commit_copies();
    wait_copies(stages - 1);
    __syncthreads();
    const int feature = item.group * TILE_ROWS + warp;
    if (feature < out_features) {
      const uint4* row = staged + (step % stages) * stage_chunks + warp * SEGMENT_CHUNKS;
      const int first_chunk = item.segment * SEGMENT_CHUNKS;
      const int width = min(SEGMENT_CHUNKS, chunks - first_chunk);
      for (int chunk = lane; chunk < width; chunk += 32) sum += dot8(row[chunk], __ldg(x_chunks + first_chunk + chunk));
      if (item.segment == segments - 1) {
        const float total = warp_sum(sum);
        if (lane == 0) y[feature] = to_bf16(total);
        sum = 0.0f;
      }
    }
    // The stage just read is refilled at the next step.
    __syncthreads();
  }
}

extern "C" __global__ void __launch_bounds__(WARPS_PER_BLOCK * 32, 3)
    gemv_bf16(bf16* y, const bf16* w, const bf16* x, int out_features, int in_features, int rows, int stages) {
  allow_dependent_launch();
  const int row = blockIdx.y;
  if (row >= rows) return;
  gemv_staged(y + (long long)row * out_features, w, x + (long long)row * in_features, out_features, in_features,
              stages);
}

extern "C" __global__ void __launch_bounds__(WARPS_PER_BLOCK * 32)
    gemv_unaligned_bf16(bf16* y, const bf16* w, const bf16* x, int out_features, int in_features, int rows) {
  allow_dependent_launch();
  const int lane = threadIdx.x & 31;
  const int warps = gridDim.x * WARPS_PER_BLOCK;
  const int row = blockIdx.y;
  if (row >= rows) return;
  const bf16* x_row = x + (long long)row * in_features;
  bf16* y_row = y + (long long)row * out_features;
  wait_for_previous_grid();
  for (int feature = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5); feature < out_features; feature += warps) {
    const bf16* w_row = w + (long long)feature * in_features;
    float sum = 0.0f;
    for (int k = lane; k < in_features; k += 32) sum = fmaf(to_float(w_row[k]), to_float(x_row[k]), sum);
    const float total = warp_sum(sum);
    if (lane == 0) y_row[feature] = to_bf16(total);
  }
}
