// MoE routing on the device: group each row's top-k choices by expert, and combine the experts' outputs per row.
// A "slot" is one (row, rank) choice: slot = row · top_k + rank; expert_ids and expert_weights are [rows, top_k].
//
// moe_group_pairs (one block of 1024 threads; experts <= 256). The backend runs the same body (moe_group.cuh) on the
// last block of the router's launch (router.cu, router_quantize.cu), which writes these same tables; this launch groups
// ids no router wrote (the kernel contract's expert cases, the bench):
//   pair_slots:     [rows · top_k] int32, the slots grouped by expert (ascending expert), ascending slot within an
//                   expert (= ascending row, then rank): a deterministic order, whatever the call's other rows
//   expert_offsets: [experts + 1] int32, expert e's slots are pair_slots[offsets[e] .. offsets[e+1])
//   tiles:          [max_tiles, 4] int32 = (expert, first pair, pairs, 0), at most tile_pairs pairs each, experts
//                   in ascending order; unused entries are (−1, 0, 0, 0); pair_slots past the grouped ones are −1
//   tile_count:     [1] int32, the number of tiles used (sizes come from the device, the grid is the worst case)
//   Counting uses shared-memory integer atomics (exact in any order); each slot's position is its expert's offset
//   plus the number of equal-expert slots before it (per warp by __match_any_sync, across warps by a fixed scan).
//   An expert id outside [0, experts) is left out of every list (moe_combine makes that row NaN).
//
// moe_combine (one block per row, 256 threads, 8 columns per thread):
//   out[r, c] = bf16(fp32( Σ_{ranks in ascending expert id, then rank} bf16(w_k) · y[r·top_k + k, c]
//                          + sigmoid(g_r) · shared[r, c] ))
//   y: [rows · top_k, hidden] bf16 expert outputs by slot; shared: [rows, hidden] bf16; g: [rows] bf16 logit.
//   The sum runs in fp64 in the cpu reference's order (src/backend/cpu/moe-block.ts: ascending expert id, weights
//   rounded to bf16, products of bf16 values exact in fp64), then rounds fp64 → fp32 → bf16 as the cpu's bf16 mode
//   stores it. A row with an expert id out of range is NaN. No atomics: each output element is one thread's sum.
#include "moe_group.cuh"

#define MAX_TOP_K 16

extern "C" __global__ void __launch_bounds__(GROUP_THREADS)
    moe_group_pairs(int* pair_slots, int* expert_offsets, int* tiles, int* tile_count, const int* expert_ids,
                    int rows, int top_k, int experts, int tile_pairs, int max_tiles) {
  KERNEL_PROLOGUE();
  group_pairs<FAULT_NONE, GROUP_WARPS>(pair_slots, expert_offsets, tiles, tile_count, expert_ids, rows, top_k, experts, tile_pairs,
                          max_tiles);
}

#define COMBINE_THREADS 256

extern "C" __global__ void __launch_bounds__(COMBINE_THREADS)
    moe_combine(bf16* out, const bf16* y, const int* expert_ids, const float* expert_weights, const bf16* shared,
                const bf16* shared_gate, int rows, int top_k, int hidden, int experts) {
  KERNEL_PROLOGUE();
  const long long row = blockIdx.x;
  if (row >= rows) return;
  // The ranks in ascending expert id (ties by rank), sorted once per row by thread 0 into shared memory.
  __shared__ int order[MAX_TOP_K];
  __shared__ int row_valid;
  if (threadIdx.x == 0) {
    int ids[MAX_TOP_K];
    bool valid = true;
#pragma unroll
    for (int k = 0; k < MAX_TOP_K; k++) ids[k] = k < top_k ? expert_ids[row * top_k + k] : 0;
#pragma unroll
    for (int k = 0; k < MAX_TOP_K; k++) {
      if (k < top_k) {
        int position = 0;
#pragma unroll
        for (int other = 0; other < MAX_TOP_K; other++) {
          if (other < top_k && (ids[other] < ids[k] || (ids[other] == ids[k] && other < k))) position++;
        }
        valid = valid && ids[k] >= 0 && ids[k] < experts;
        order[position] = k;
      }
    }
    row_valid = valid;
  }
  __syncthreads();
  const bool valid = row_valid != 0;
  const double gate = (double)to_float(shared_gate[row]);
  const double scale = 1.0 / (1.0 + exp(-gate));
  for (int column = threadIdx.x * 8; column < hidden; column += COMBINE_THREADS * 8) {
    // Every rank's weight and chunk requested before the first is added, so the loads are in flight together.
    float weights[MAX_TOP_K];
    uint4 chunks[MAX_TOP_K];
#pragma unroll
    for (int j = 0; j < MAX_TOP_K; j++) {
      if (j < top_k) {
        const int k = order[j];
        weights[j] = expert_weights[row * top_k + k];
        chunks[j] = *reinterpret_cast<const uint4*>(y + (row * top_k + k) * hidden + column);
      }
    }
    const uint4 shared_chunk = *reinterpret_cast<const uint4*>(shared + row * hidden + column);
    double sums[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
#pragma unroll
    for (int j = 0; j < MAX_TOP_K; j++) {
      if (j < top_k) {
        const double weight = (double)to_float(to_bf16(weights[j]));
        const bf16* values = reinterpret_cast<const bf16*>(&chunks[j]);
#pragma unroll
        for (int i = 0; i < 8; i++) sums[i] += weight * (double)to_float(values[i]);
      }
    }
    const bf16* shared_values = reinterpret_cast<const bf16*>(&shared_chunk);
    uint4 result;
    bf16* result_values = reinterpret_cast<bf16*>(&result);
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const double total = valid ? sums[i] + scale * (double)to_float(shared_values[i]) : (double)NAN;
      result_values[i] = to_bf16(__double2float_rn(total));
    }
    *reinterpret_cast<uint4*>(out + row * hidden + column) = result;
  }
}
