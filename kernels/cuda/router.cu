// MoE router: softmax over each row's expert logits, top-k, renormalise the k chosen weights to sum 1, and (bf16
// experts) the grouping of the choices by expert in the same launch.
//   logits: [rows, experts] bf16; expert_ids: [rows, top_k] int32; expert_weights: [rows, top_k] fp32
//   p_e = exp(l_e − max) / Σ exp(l − max) in fp32; the k largest p are taken in descending order, ties to the
//   lower expert index; weight_j = p_j / Σ_chosen p. A NaN logit (or +inf, through inf − inf) makes every p NaN,
//   and then the choice falls to the lowest unchosen indices, as a sequential `p > best` scan does.
//   pair_slots, expert_offsets, tiles, tile_count: moe_route.cu's tables (experts <= 256), written by the last block
//   of the grid to finish (moe_group.cuh: the same integers as moe_group_pairs), or for one row by its routing warp
//   (group_one_row); arrivals: one int32, zero before the first launch and left at zero by every launch; null: no
//   grouping (the tables are not touched)
// One warp per row (router.cuh), ROUTER_THREADS / 32 rows a block; experts <= 512, top_k <= 32.
#include "moe_group.cuh"
#include "router.cuh"

#define ROUTER_THREADS 128

extern "C" __global__ void __launch_bounds__(ROUTER_THREADS)
    router_top_k(int* expert_ids, float* expert_weights, int* pair_slots, int* expert_offsets, int* tiles,
                 int* tile_count, int* arrivals, const bf16* logits, int rows, int experts, int top_k, int tile_pairs,
                 int max_tiles) {
  KERNEL_PROLOGUE();
  const long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const bool routed = row < rows;
  int expert = -1;
  if (routed) {
    expert = route_row(expert_ids + row * top_k, expert_weights + row * top_k, logits + row * experts, experts, top_k);
  }
  group_routed<FAULT_NONE, ROUTER_THREADS / 32>(routed, expert, arrivals, pair_slots, expert_offsets, tiles,
                                                tile_count, expert_ids, rows, top_k, experts, tile_pairs, max_tiles);
}
