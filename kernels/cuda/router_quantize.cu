// The MoE router (router.cu), the FP8 quantisation of the MoE input for the gate|up GEMM (quantize_fp8.cu) and the
// grouping of the choices by expert (moe_route.cu's moe_group_pairs) in one launch: routing and quantising read
// different tensors and neither needs the other, so warp 0 of a block routes the block's row while the block's other
// warps quantise that row's 128-column blocks; then the last block of the grid to finish groups every row's ids (a
// launch of one row: its routing warp groups them as soon as it has routed, moe_group.cuh group_one_row).
// Every output has the bits of router_top_k, quantize_e4m3_rows and moe_group_pairs: the arithmetic is theirs
// (router.cuh, quantize_fp8.cuh, moe_group.cuh); only which warp or block does it differs, and the grouping's tables
// are integers that do not depend on the block's width.
//   logits: [rows, experts] bf16; expert_ids: [rows, top_k] int32; expert_weights: [rows, top_k] fp32
//   x: [rows, cols] bf16; q: [rows, cols] uint8 e4m3 bits; scales: [rows, ceil(cols/128)] fp32
//   pair_slots, expert_offsets, tiles, tile_count: moe_route.cu's tables (experts <= 256); arrivals: one int32, zero
//   before the first launch and left at zero by every launch; null: no grouping (the tables are not touched)
// One block per row: warp 0 routes (experts <= 512, top_k <= 32), warps 1 .. W quantise blocks w − 1, w − 1 + W, ...
#include "moe_group.cuh"
#include "quantize_fp8.cuh"
#include "router.cuh"

// One routing warp and up to 16 quantising warps (a 2048-wide row has 16 column blocks).
#define ROUTER_QUANTIZE_MAX_THREADS (17 * 32)

// The contract's controls (kernels/controls/router_quantize_controls.cu) compile this file under other names, their
// warps leaving each row's last column block out or their grouping never resetting the arrival counter.
#ifndef ROUTER_QUANTIZE_ENTRY
#define ROUTER_QUANTIZE_ENTRY router_top_k_quantize
#define ROUTER_QUANTIZE_BLOCKS_LEFT_OUT 0
#define ROUTER_QUANTIZE_GROUPING_FAULT FAULT_NONE
#endif

extern "C" __global__ void __launch_bounds__(ROUTER_QUANTIZE_MAX_THREADS)
    ROUTER_QUANTIZE_ENTRY(int* expert_ids, float* expert_weights, uint8_t* q, float* scales, int* pair_slots,
                          int* expert_offsets, int* tiles, int* tile_count, int* arrivals, const bf16* logits,
                          const bf16* x, int rows, int experts, int top_k, int cols, int tile_pairs, int max_tiles) {
  KERNEL_PROLOGUE();
  const long long row = blockIdx.x;
  const int warp = threadIdx.x >> 5;
  const bool routed = row < rows && warp == 0;
  int expert = -1;
  if (routed) {
    expert = route_row(expert_ids + row * top_k, expert_weights + row * top_k, logits + row * experts, experts, top_k);
  } else if (row < rows) {
    const int quantize_warps = (blockDim.x >> 5) - 1;
    const int blocks = (cols + QUANTIZE_BLOCK - 1) / QUANTIZE_BLOCK;
    for (int block = warp - 1; block < blocks - ROUTER_QUANTIZE_BLOCKS_LEFT_OUT; block += quantize_warps) {
      quantize_row_block(q, scales, x, row, block, cols, blocks, E4M3_MAXIMUM);
    }
  }
  group_routed<ROUTER_QUANTIZE_GROUPING_FAULT, ROUTER_QUANTIZE_MAX_THREADS / 32>(
      routed, expert, arrivals, pair_slots, expert_offsets, tiles, tile_count, expert_ids, rows, top_k, experts,
      tile_pairs, max_tiles);
}
