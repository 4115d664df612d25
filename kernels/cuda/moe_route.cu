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
//
// moe_combine_add_rms_norm (one block per row, the threads of the add_rms_norm launch for `hidden`, at most 512): the
// combine above (4 columns a thread, the same sums), each element rounded to bf16 as moe_combine stores it and staged
// in shared memory, then rms_norm.cu's residual add and zero-centred norm of the staged row (x = bf16(x + combined)
// written back, out = norm(x)), so x and out have the bits of moe_combine then add_rms_norm in one launch instead of
// two; the combined row itself is not stored. out must not alias x.
#include "moe_combine.cuh"
#include "moe_group.cuh"

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
    order_row_ranks(order, &row_valid, expert_ids + row * top_k, top_k, experts);
  }
  __syncthreads();
  const bool valid = row_valid != 0;
  const double scale = shared_expert_scale(shared_gate[row]);
  for (int column = threadIdx.x * 8; column < hidden; column += COMBINE_THREADS * 8) {
    float totals[8];
    combine_totals(totals, y + row * top_k * hidden, expert_weights + row * top_k, order, shared + row * hidden, scale,
                   valid, top_k, hidden, column);
    *reinterpret_cast<uint4*>(out + row * hidden + column) = to_bf16_chunk(totals);
  }
}

MOE_COMBINE_ADD_RMS_NORM_KERNEL(moe_combine_add_rms_norm_bf16, bf16, false)
MOE_COMBINE_ADD_RMS_NORM_KERNEL(moe_combine_add_rms_norm_f32_weight_bf16, float, false)
