// The FP8 experts of a one-row call (a decode step of one lane) in two launches, each with the bits of the launches it
// replaces; a pair's result depends on its own row and expert alone (a tile's other pairs are zero), so which block
// does what changes no bit.
// moe_gate_up_fp8_routed: the router, x's e4m3 quantisation, the grouping and the gate|up GEMM (router_top_k_quantize
// then moe_gate_up_fp8). Block (x, y) takes choice x (its pair is slot x of row 0: a tile of one pair) and weight
// group y. Its warp 0 routes the row (router.cuh's arithmetic: the same choices in every block) while warps 1 to 3
// quantise the row into shared memory (quantize_block: the bytes and scales router_top_k_quantize writes); then every
// warp loads its weights (the expert is known only then) and runs moe_fp8.cuh's gate|up groups. Block (0, 0)'s warp 0
// writes the ids, the weights and the grouping's tables (group_one_row). Grid: top_k × 2I/16. Block: THREADS.
// BLOCKS_LEFT_OUT and FAULT are the contract's controls' planted faults (kernels/controls/moe_controls.cu).
#pragma once
#include "moe_fp8.cuh"
#include "moe_group.cuh"
#include "quantize_fp8.cuh"
#include "router.cuh"

template <int FAULT, int BLOCKS_LEFT_OUT>
__device__ __forceinline__ void gate_up_fp8_routed(bf16* h, int* expert_ids, float* expert_weights, int* pair_slots,
                                                   int* expert_offsets, int* tiles, int* tile_count,
                                                   const bf16* logits, const bf16* x_row, const uint8_t* w,
                                                   const float* w_scales, int experts, int top_k, int hidden,
                                                   int intermediate, int max_tiles) {
  extern __shared__ uint4 shared_words[];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int slot = blockIdx.x;
  const int blocks = hidden / 128;
  const TileStage stage = tile_stage(shared_words, hidden);
  __shared__ int slots[TILE_PAIRS];
  __shared__ int block_expert;
  if (warp == 0) {
    // Warp 0 routes while the others stage the row: one routing warp a block keeps the SM's issue slots for them.
    const RouteChoice choice = choose_row(logits, experts, top_k);
    const int chosen = __shfl_sync(0xffffffffu, choice.expert, slot);
    if (lane == 0) block_expert = chosen;
    if (lane < TILE_PAIRS) slots[lane] = lane == 0 ? slot : -1;
    if (blockIdx.x == 0 && blockIdx.y == 0) {
      if (lane < top_k) {
        expert_ids[lane] = choice.expert;
        expert_weights[lane] = choice.weight;
      }
      group_one_row<FAULT>(choice.expert, pair_slots, expert_offsets, tiles, tile_count, top_k, experts, TILE_PAIRS,
                           max_tiles);
    }
  } else {
    // Pair 0 is the row, a warp a 128-column block; the tile's other pairs are zero bytes with scale 0.
    for (int block = warp - 1; block < blocks - BLOCKS_LEFT_OUT; block += WARPS - 1) {
      quantize_block(stage.x, stage.x_scales + block, x_row, block, hidden, E4M3_MAXIMUM);
    }
    const int chunks = hidden / 16;
    for (int index = threadIdx.x - 32; index < (TILE_PAIRS - 1) * chunks; index += THREADS - 32) {
      const int pair = 1 + index / chunks;
      reinterpret_cast<uint4*>(stage.x + pair * stage.x_stride)[index % chunks] = make_uint4(0, 0, 0, 0);
    }
    for (int index = blocks + threadIdx.x - 32; index < TILE_PAIRS * blocks; index += THREADS - 32) {
      stage.x_scales[index] = 0.0f;
    }
  }
  __syncthreads();
  const int expert = block_expert;
  const int per_warp = blocks / WARPS;
  const int first_group = blockIdx.y;
  const uint8_t* routed_weights = w + (long long)expert * (2 * intermediate / 16) * blocks * BLOCK_BYTES;
  uint4 weights[MAX_BLOCKS_PER_WARP][4];
  load_weights(weights, routed_weights + (long long)first_group * blocks * BLOCK_BYTES, warp * per_warp, per_warp,
               lane);
  gate_up_groups(h, weights, routed_weights, w_scales, expert, stage, slots, first_group, 1, hidden, intermediate,
                 false);
}

// The down GEMM of a one-row call after moe_gate_up_fp8_routed (moe_down_fp8_routed): block b takes choice
// b / chunks as a tile of one pair (slot = choice, row 0), its expert read from the ids, not from the grouping's
// tables, so the slot is known at once and h's row is requested beside the id; then moe_fp8.cuh's down groups, one
// group a warp. The tile is the one the grouping would hold for that pair (pairs 1 to 7 empty), so y has the bits of
// moe_down_fp8. A choice whose expert is out of range is left out, as the grouping leaves it out (the combine makes
// its row NaN). SLOT_SHIFT is a contract control's planted fault: the block reads the id of the choice after its own.
// Grid: top_k · hidden / (16 · DOWN_WARPS) blocks, tile-major. Block: DOWN_THREADS.
template <int SLOT_SHIFT>
__device__ __forceinline__ void down_fp8_routed(bf16* y, const bf16* h, const uint8_t* w, const float* w_scales,
                                                const int* expert_ids, int experts, int top_k, int hidden,
                                                int intermediate) {
  extern __shared__ uint4 shared_words[];
  const int groups = hidden / 16;
  const int chunks = groups / DOWN_WARPS;
  const int slot = blockIdx.x / chunks;
  const int expert = expert_ids[(slot + SLOT_SHIFT) % top_k];
  if (expert < 0 || expert >= experts) return;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int blocks = intermediate / 128;
  const int first_group = (blockIdx.x - slot * chunks) * DOWN_WARPS + warp;
  const uint8_t* first_weights = w + ((long long)expert * groups + first_group) * blocks * BLOCK_BYTES;
  uint4 weights[MAX_BLOCKS_PER_WARP][4];
  load_weights(weights, first_weights, 0, min(blocks, MAX_BLOCKS_PER_WARP), lane);
  const TileStage stage = tile_stage(shared_words, intermediate);
  __shared__ int slots[TILE_PAIRS];
  if (threadIdx.x < TILE_PAIRS) slots[threadIdx.x] = threadIdx.x == 0 ? slot : -1;
  __syncthreads();
  quantize_tile_rows(stage.x, stage.x_scales, stage.x_stride, h, slots, TILE_PAIRS, intermediate, DOWN_WARPS,
                     E4M3_MAXIMUM);
  __syncthreads();
  down_groups(y, weights, first_weights, w_scales, expert, stage, slots, first_group, 1, hidden, intermediate, 1);
}
