// Grouped FP8 (e4m3) block-scaled expert GEMMs of the sparse MoE block, walking the grouping's tile table
// (moe_group.cuh; written by the router's launch).
//   y[p, o] = Σ_{blocks b ascending} (S_b · s_x[p, b]) · s_w[o/128, b],  S_b = Σ_{i ∈ b} q_x[p, i] · w[o, i]
// as src/backend/cpu/ops/fp8.ts linearFp8Block defines it. e4m3 values are widened exactly to f16 and S_b is summed
// by mma.sync m16n8k16 (f16 inputs, fp32 accumulator) over the block's 8 k-steps, from zero for every block; the
// 16 scaled block values are then added in ascending b in fp32, by one thread per output.
//
// moe_gate_up_fp8: h[slot, j] = bf16(silu(bf16(gate_j)) · bf16(up_j)) (the cpu's bf16 rounding points)
//   q_x: [rows, hidden] e4m3 bytes, s_x: [rows, hidden/128] fp32 (the row's token activations, quantised)
//   w:   [experts, 2I/16 row groups, hidden/128 blocks, 2048 bytes] in fragment order (moeWeights.ts): row group r
//        holds gate rows 8r..8r+7 then up rows 8r..8r+7
//   w_scales: [experts, 2I/128, hidden/128] fp32: the gate's 128×128 block scales, then the up projection's
//   h:   [rows · top_k, I] bf16, by slot
// moe_down_fp8: y[slot, o] = bf16(...) over h quantised per row per 128 columns exactly as quantizeActivationsE4m3
//   (and quantize_e4m3_rows: the one device definition in quantize_fp8.cuh), by each block into shared memory for its
//   tile's rows, so no quantised copy of h is written or read back
//   h: [rows · top_k, I] bf16, by slot
//   w: [experts, hidden/16 row groups, I/128 blocks, 2048 bytes] fragment order (rows 16r..16r+15)
//   w_scales: [experts, hidden/128, I/128] fp32; y: [rows · top_k, hidden] bf16 by slot (bf16: the cpu rounds every
//   expert's output to bf16 before the combine, and half the bytes of fp32)
// gate|up grid: x = tile (the worst-case count; tiles past tile_count exit), y = a run of `groups_walked` 16-row
// weight groups walked in turn; 4 warps split each group's K blocks (each warp a fixed range); partials meet in shared
// memory and are summed in block order. down grid: one dimension, tile-major, DOWN_WARPS warps a block, each walking
// `groups_walked` weight groups (moe_fp8.cuh). The launcher walks 1 group at a few rows (more blocks for little work)
// and 4 from MOE_WALK_ROWS rows on (the tile's rows staged or quantised once for 4 groups, the weights streamed through
// a ring). Either way a pair's result depends only on its own row and the expert's weights, never on the tile's other
// pairs (padding is zero) or on how many groups a block walks.
#include "moe_fp8.cuh"
#include "moe_fp8_routed.cuh"
#include "moe_fp8_wide.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
    moe_gate_up_fp8(bf16* h, const uint8_t* q_x, const float* s_x, const uint8_t* w, const float* w_scales,
                    const int* pair_slots, const int* tiles, const int* tile_count, int hidden, int intermediate,
                    int top_k, int groups_walked) {
  KERNEL_PROLOGUE();
  gate_up_fp8(h, q_x, s_x, w, w_scales, pair_slots, tiles, tile_count, hidden, intermediate, top_k, groups_walked,
              false);
}

extern "C" __global__ void __launch_bounds__(DOWN_THREADS, 2)
    moe_down_fp8(bf16* y, const bf16* h, const uint8_t* w, const float* w_scales, const int* pair_slots,
                 const int* tiles, const int* tile_count, int hidden, int intermediate, int groups_walked) {
  KERNEL_PROLOGUE();
  down_fp8(y, h, w, w_scales, pair_slots, tiles, tile_count, hidden, intermediate, groups_walked, TILE_PAIRS,
           E4M3_MAXIMUM);
}

// A one-row call's router, quantiser, grouping and gate|up in one launch (moe_fp8_routed.cuh): the bits of
// router_top_k_quantize then moe_gate_up_fp8.
extern "C" __global__ void __launch_bounds__(THREADS)
    moe_gate_up_fp8_routed(bf16* h, int* expert_ids, float* expert_weights, int* pair_slots, int* expert_offsets,
                           int* tiles, int* tile_count, const bf16* logits, const bf16* x, const uint8_t* w,
                           const float* w_scales, int experts, int top_k, int hidden, int intermediate,
                           int max_tiles) {
  KERNEL_PROLOGUE();
  gate_up_fp8_routed<FAULT_NONE, 0>(h, expert_ids, expert_weights, pair_slots, expert_offsets, tiles, tile_count,
                                    logits, x, w, w_scales, experts, top_k, hidden, intermediate, max_tiles);
}

// Its down GEMM (moe_fp8_routed.cuh): each choice's expert from the ids, the bits of moe_down_fp8.
extern "C" __global__ void __launch_bounds__(DOWN_THREADS, 2)
    moe_down_fp8_routed(bf16* y, const bf16* h, const uint8_t* w, const float* w_scales, const int* expert_ids,
                        int experts, int top_k, int hidden, int intermediate) {
  KERNEL_PROLOGUE();
  down_fp8_routed<0>(y, h, w, w_scales, expert_ids, experts, top_k, hidden, intermediate);
}

// The same GEMMs on wide tiles of up to 64 pairs (moe_fp8_wide.cuh): the same bits, for calls of many rows.
extern "C" __global__ void __launch_bounds__(WIDE_THREADS)
    moe_gate_up_fp8_wide(bf16* h, const uint8_t* q_x, const float* s_x, const uint8_t* w, const float* w_scales,
                         const int* pair_slots, const int* tiles, const int* tile_count, int hidden, int intermediate,
                         int top_k, const int* expert_offsets) {
  KERNEL_PROLOGUE();
  gate_up_fp8_wide(h, q_x, s_x, w, w_scales, pair_slots, expert_offsets, tiles, tile_count, hidden, intermediate,
                   top_k, false);
}

extern "C" __global__ void __launch_bounds__(WIDE_DOWN_THREADS, 1)
    moe_down_fp8_wide(bf16* y, const bf16* h, const uint8_t* w, const float* w_scales, const int* pair_slots,
                      const int* tiles, const int* tile_count, int hidden, int intermediate,
                      const int* expert_offsets) {
  KERNEL_PROLOGUE();
  down_fp8_wide(y, h, w, w_scales, pair_slots, expert_offsets, tiles, tile_count, hidden, intermediate, WIDE_PAIRS);
}
