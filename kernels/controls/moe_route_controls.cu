// Deliberately wrong MoE grouping for the kernel contract's controls (test/kernels/): moe_group_pairs
// (kernels/cuda/moe_route.cu, its body in moe_group.cuh) with one planted fault each. Never launched by the backend.
//   control_moe_group_drops_last_pair   each expert's last tile counts one pair fewer (an off-by-one pair count:
//                                       the GEMMs would skip the expert's last pair)          (accuracy: tiles exact)
//   control_moe_group_expert_reversed   an expert's slots in descending instead of ascending slot order (counts,
//                                       offsets and tiles right)                          (accuracy: pair_slots exact)

#include "moe_group.cuh"

extern "C" __global__ void __launch_bounds__(GROUP_THREADS)
    control_moe_group_drops_last_pair(int* pair_slots, int* expert_offsets, int* tiles, int* tile_count,
                                      const int* expert_ids, int rows, int top_k, int experts, int tile_pairs,
                                      int max_tiles) {
  KERNEL_PROLOGUE();
  group_pairs<FAULT_LAST_PAIR_DROPPED, GROUP_WARPS>(pair_slots, expert_offsets, tiles, tile_count, expert_ids, rows, top_k,
                                       experts, tile_pairs, max_tiles);
}

extern "C" __global__ void __launch_bounds__(GROUP_THREADS)
    control_moe_group_expert_reversed(int* pair_slots, int* expert_offsets, int* tiles, int* tile_count,
                                      const int* expert_ids, int rows, int top_k, int experts, int tile_pairs,
                                      int max_tiles) {
  KERNEL_PROLOGUE();
  group_pairs<FAULT_EXPERT_REVERSED, GROUP_WARPS>(pair_slots, expert_offsets, tiles, tile_count, expert_ids, rows, top_k, experts,
                                     tile_pairs, max_tiles);
}
