// The grouped FP8 down GEMM with the MoE combine after it in the same launch (moe_down_fp8_combine, moe_fp8.cu),
// shared with the contract's control. Every block runs down_fp8 (moe_fp8.cuh) as moe_down_fp8 does, then counts
// itself in on its column chunk's arrival counter; the last block of a chunk to arrive combines that chunk's columns
// for every row with moe_combine's arithmetic (moe_combine.cuh). Which block combines depends on timing, what it
// computes does not: the same bits as moe_down_fp8 then moe_combine, one launch and one wait fewer.
//   arrivals: [hidden / (128 · groups_walked)] int32, zero before the first launch; the last arrival resets its own,
//   so every launch and graph replay finds them at zero. `keep_counter` leaves them counted: only the control asks.
#pragma once
#include "moe_combine.cuh"
#include "moe_fp8.cuh"

// Rows whose order the combining block sorts at once (a row a thread), then combines.
#define COMBINE_ROWS_AT_ONCE 16

__device__ __forceinline__ void down_fp8_combine(bf16* out, bf16* y, const bf16* h, const uint8_t* w,
                                                 const float* w_scales, const int* pair_slots, const int* tiles,
                                                 const int* tile_count, const int* expert_ids,
                                                 const float* expert_weights, const bf16* shared,
                                                 const bf16* shared_gate, int* arrivals, int rows, int top_k,
                                                 int experts, int hidden, int intermediate, int groups_walked,
                                                 bool keep_counter) {
  down_fp8(y, h, w, w_scales, pair_slots, tiles, tile_count, hidden, intermediate, groups_walked, TILE_PAIRS,
           E4M3_MAXIMUM);
  // The grid is tile-major (moe_fp8.cuh down_fp8): block x covers column chunk x % chunks of tile x / chunks. Blocks
  // past the tile count wrote nothing and count themselves in all the same.
  const int chunks = hidden / (16 * DOWN_WARPS * groups_walked);
  const int chunk = blockIdx.x % chunks;
  __shared__ int last_arrival;
  __threadfence();  // this block's expert outputs are visible device-wide before it counts itself in
  __syncthreads();
  if (threadIdx.x == 0) {
    last_arrival = atomicAdd(arrivals + chunk, 1) == (int)(gridDim.x / chunks) - 1;
    if (last_arrival && !keep_counter) arrivals[chunk] = 0;
  }
  __syncthreads();
  if (!last_arrival) return;
  __threadfence();  // the others fenced their outputs before arriving: read them only after seeing every arrival
  const int columns = hidden / chunks;
  const int units_per_row = columns / 8;
  __shared__ int order[COMBINE_ROWS_AT_ONCE][MAX_TOP_K];
  __shared__ int valid[COMBINE_ROWS_AT_ONCE];
  for (int first_row = 0; first_row < rows; first_row += COMBINE_ROWS_AT_ONCE) {
    const int batch = min(COMBINE_ROWS_AT_ONCE, rows - first_row);
    if ((int)threadIdx.x < batch) {
      valid[threadIdx.x] = combine_row_order(order[threadIdx.x], expert_ids, first_row + threadIdx.x, top_k, experts);
    }
    __syncthreads();
    for (int unit = threadIdx.x; unit < batch * units_per_row; unit += blockDim.x) {
      const int r = unit / units_per_row;
      const int column = chunk * columns + (unit - r * units_per_row) * 8;
      combine_chunk(out, y, expert_weights, shared, shared_gate, order[r], valid[r] != 0, first_row + r, column,
                    top_k, hidden);
    }
    __syncthreads();  // the orders are sorted again
  }
}
