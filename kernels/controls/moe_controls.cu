// Deliberately wrong MoE kernels for the kernel contract's controls (test/kernels/): each has a real kernel's
// signature and one planted bug that a gate must catch. Never launched by the backend.
//   control_moe_down_skips_last_pair   down GEMM that never writes a tile's last pair (an off-by-one pair count;
//                                      every pair of a one-pair expert)               (poisoned-output gate)
//   control_moe_down_h_scale_447       down GEMM whose in-kernel quantiser of h scales by amax/447, not amax/448
//                                      (one constant off in the shared quantiser)     (accuracy gate)
//   control_moe_gate_up_scales_swapped gate|up GEMM that scales the gate rows by the up projection's block scales and
//                                      the up rows by the gate's                      (accuracy gate)
//   control_moe_gate_up_wide_blocks_descending  wide-tile gate|up GEMM that adds the K blocks' scaled sums from the
//                                      last block to the first: close, but not the narrow tiles' bits
//                                                                                     (equivalence gate)
//   control_moe_down_wide_skips_last_pair  wide-tile down GEMM that never writes a wide tile's last pair
//                                                                                     (poisoned-output gate)
//   control_moe_routed_skips_last_block  one-row router + gate|up whose quantising warps stop one column block short:
//                                      the row's last 128 columns and their scale are never staged
//                                                                                     (accuracy gate)
//   control_moe_routed_offsets_inclusive  one-row router + gate|up whose grouping counts each expert into its own
//                                      offset                                          (the tables' exact gate)
//   control_moe_down_routed_next_expert  one-row down GEMM whose block for choice k reads choice k + 1's expert
//                                      (an off-by-one id)                              (accuracy gate)
//   control_moe_combine_batched_order  combine that, when the call has more than one row, sums the ranks in rank
//                                      order with a bf16 accumulator (a batched fast path): close, but a row's bits
//                                      then depend on the call it is in                (batch-invariance gate)
//                                      (not an fp32 accumulator: products of two bf16 values are exact in fp32 and
//                                      their sums nearly always are, so its bits would rarely change)
#include "common.cuh"
#include "moe_fp8.cuh"
#include "moe_fp8_routed.cuh"
#include "moe_fp8_wide.cuh"

extern "C" __global__ void __launch_bounds__(DOWN_THREADS, 2)
    control_moe_down_skips_last_pair(bf16* y, const bf16* h, const uint8_t* w, const float* w_scales,
                                     const int* pair_slots, const int* tiles, const int* tile_count, int hidden,
                                     int intermediate, int groups_walked) {
  KERNEL_PROLOGUE();
  down_fp8(y, h, w, w_scales, pair_slots, tiles, tile_count, hidden, intermediate, groups_walked, TILE_PAIRS - 1,
           E4M3_MAXIMUM);
}

extern "C" __global__ void __launch_bounds__(DOWN_THREADS, 2)
    control_moe_down_h_scale_447(bf16* y, const bf16* h, const uint8_t* w, const float* w_scales,
                                 const int* pair_slots, const int* tiles, const int* tile_count, int hidden,
                                 int intermediate, int groups_walked) {
  KERNEL_PROLOGUE();
  down_fp8(y, h, w, w_scales, pair_slots, tiles, tile_count, hidden, intermediate, groups_walked, TILE_PAIRS, 447.0f);
}

extern "C" __global__ void __launch_bounds__(THREADS)
    control_moe_gate_up_scales_swapped(bf16* h, const uint8_t* q_x, const float* s_x, const uint8_t* w,
                                       const float* w_scales, const int* pair_slots, const int* tiles,
                                       const int* tile_count, int hidden, int intermediate, int top_k,
                                       int groups_walked) {
  KERNEL_PROLOGUE();
  gate_up_fp8(h, q_x, s_x, w, w_scales, pair_slots, tiles, tile_count, hidden, intermediate, top_k, groups_walked,
              true);
}

extern "C" __global__ void __launch_bounds__(WIDE_THREADS)
    control_moe_gate_up_wide_blocks_descending(bf16* h, const uint8_t* q_x, const float* s_x, const uint8_t* w,
                                               const float* w_scales, const int* pair_slots, const int* tiles,
                                               const int* tile_count, int hidden, int intermediate, int top_k,
                                               const int* expert_offsets) {
  KERNEL_PROLOGUE();
  gate_up_fp8_wide(h, q_x, s_x, w, w_scales, pair_slots, expert_offsets, tiles, tile_count, hidden, intermediate,
                   top_k, true);
}

extern "C" __global__ void __launch_bounds__(WIDE_DOWN_THREADS, 1)
    control_moe_down_wide_skips_last_pair(bf16* y, const bf16* h, const uint8_t* w, const float* w_scales,
                                          const int* pair_slots, const int* tiles, const int* tile_count, int hidden,
                                          int intermediate, const int* expert_offsets) {
  KERNEL_PROLOGUE();
  down_fp8_wide(y, h, w, w_scales, pair_slots, expert_offsets, tiles, tile_count, hidden, intermediate,
                WIDE_PAIRS - 1);
}

extern "C" __global__ void control_moe_combine_batched_order(bf16* out, const bf16* y, const int* expert_ids,
                                                             const float* expert_weights, const bf16* shared,
                                                             const bf16* shared_gate, int rows, int top_k,
                                                             int hidden, int experts) {
  KERNEL_PROLOGUE();
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const double scale = 1.0 / (1.0 + exp(-(double)to_float(shared_gate[row])));
  for (int column = threadIdx.x; column < hidden; column += blockDim.x) {
    double total;
    if (rows > 1) {
      float sum = 0.0f;
      for (int k = 0; k < top_k; k++) {
        const float weight = to_float(to_bf16(expert_weights[row * top_k + k]));
        const float product = weight * to_float(y[(row * top_k + k) * hidden + column]);
        sum = to_float(to_bf16(sum + product));
      }
      total = (double)sum;
    } else {
      // One row: ascending expert id in fp64, as the real kernel.
      total = 0.0;
      int previous = -1;
      int previous_rank = -1;
      for (int j = 0; j < top_k; j++) {
        int best = -1;
        for (int k = 0; k < top_k; k++) {
          const int e = expert_ids[row * top_k + k];
          const bool after = e > previous || (e == previous && k > previous_rank);
          if (after && (best < 0 || e < expert_ids[row * top_k + best])) best = k;
        }
        previous = expert_ids[row * top_k + best];
        previous_rank = best;
        total += (double)to_float(to_bf16(expert_weights[row * top_k + best])) *
                 (double)to_float(y[(row * top_k + best) * hidden + column]);
      }
    }
    total += scale * (double)to_float(shared[row * hidden + column]);
    out[row * hidden + column] = to_bf16(__double2float_rn(total));
  }
}

extern "C" __global__ void __launch_bounds__(THREADS)
    control_moe_routed_skips_last_block(bf16* h, int* expert_ids, float* expert_weights, int* pair_slots,
                                        int* expert_offsets, int* tiles, int* tile_count, const bf16* logits,
                                        const bf16* x, const uint8_t* w, const float* w_scales, int experts,
                                        int top_k, int hidden, int intermediate, int max_tiles) {
  KERNEL_PROLOGUE();
  gate_up_fp8_routed<FAULT_NONE, 1>(h, expert_ids, expert_weights, pair_slots, expert_offsets, tiles, tile_count,
                                    logits, x, w, w_scales, experts, top_k, hidden, intermediate, max_tiles);
}

extern "C" __global__ void __launch_bounds__(THREADS)
    control_moe_routed_offsets_inclusive(bf16* h, int* expert_ids, float* expert_weights, int* pair_slots,
                                         int* expert_offsets, int* tiles, int* tile_count, const bf16* logits,
                                         const bf16* x, const uint8_t* w, const float* w_scales, int experts,
                                         int top_k, int hidden, int intermediate, int max_tiles) {
  KERNEL_PROLOGUE();
  gate_up_fp8_routed<FAULT_ONE_ROW_OFFSETS_INCLUSIVE, 0>(h, expert_ids, expert_weights, pair_slots, expert_offsets,
                                                          tiles, tile_count, logits, x, w, w_scales, experts, top_k,
                                                          hidden, intermediate, max_tiles);
}

extern "C" __global__ void __launch_bounds__(DOWN_THREADS, 2)
    control_moe_down_routed_next_expert(bf16* y, const bf16* h, const uint8_t* w, const float* w_scales,
                                        const int* expert_ids, int experts, int top_k, int hidden, int intermediate) {
  KERNEL_PROLOGUE();
  down_fp8_routed<1>(y, h, w, w_scales, expert_ids, experts, top_k, hidden, intermediate);
}
