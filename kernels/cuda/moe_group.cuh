// The grouping of the router's choices by expert (kernels/cuda/moe_route.cu says what it computes): the body of
// moe_group_pairs and of the grouping that ends each router launch (router.cu, router_quantize.cu, through
// group_after_last_arrival), shared with the contract's controls, which plant one fault each through FAULT.
// It runs on one block of any whole number of warps up to MAX_WARPS: the tables are integers, and each slot's
// position (its expert's offset plus the equal-expert slots before it) is the same whatever the block's width.
#pragma once
#include "common.cuh"

#define GROUP_THREADS 1024
#define GROUP_WARPS (GROUP_THREADS / 32)
#define MAX_EXPERTS 256

// FAULT_NONE is the grouping itself; the others are the contract's controls (kernels/controls/moe_route_controls.cu,
// router_quantize_controls.cu).
enum GroupingFault {
  FAULT_NONE = 0,
  FAULT_LAST_PAIR_DROPPED = 1,
  FAULT_EXPERT_REVERSED = 2,
  FAULT_COUNTER_KEPT = 3,
  FAULT_ONE_ROW_OFFSETS_INCLUSIVE = 4
};

template <int FAULT, int MAX_WARPS>
__device__ __forceinline__ void group_pairs(int* pair_slots, int* expert_offsets, int* tiles, int* tile_count,
                                            const int* expert_ids, int rows, int top_k, int experts, int tile_pairs,
                                            int max_tiles) {
  __shared__ int counts[MAX_EXPERTS];
  __shared__ int cursor[MAX_EXPERTS];
  __shared__ int first_tile[MAX_EXPERTS + 1];
  __shared__ int warp_counts[MAX_WARPS][MAX_EXPERTS];
  const int thread = threadIdx.x;
  const int threads = blockDim.x;
  const int warps = threads >> 5;
  const int lane = thread & 31;
  const int warp = thread >> 5;
  const int pairs = rows * top_k;
  for (int e = thread; e < MAX_EXPERTS; e += threads) counts[e] = 0;
  for (int index = thread; index < warps * MAX_EXPERTS; index += threads) (&warp_counts[0][0])[index] = 0;
  __syncthreads();
  // The ids go through L2 (__ldcg): in the router's launch other blocks wrote them during this grid.
  for (int slot = thread; slot < pairs; slot += threads) {
    const int e = __ldcg(expert_ids + slot);
    if (e >= 0 && e < experts) atomicAdd(&counts[e], 1);
  }
  __syncthreads();
  // Exclusive scans of the counts and of the tiles per expert: warp 0, eight experts per lane.
  if (warp == 0) {
    int local_pairs = 0;
    int local_tiles = 0;
    for (int j = 0; j < MAX_EXPERTS / 32; j++) {
      const int count = counts[lane * (MAX_EXPERTS / 32) + j];
      local_pairs += count;
      local_tiles += (count + tile_pairs - 1) / tile_pairs;
    }
    int pair_prefix = local_pairs;
    int tile_prefix = local_tiles;
    for (int offset = 1; offset < 32; offset <<= 1) {
      const int p = __shfl_up_sync(0xffffffffu, pair_prefix, offset);
      const int t = __shfl_up_sync(0xffffffffu, tile_prefix, offset);
      if (lane >= offset) {
        pair_prefix += p;
        tile_prefix += t;
      }
    }
    pair_prefix -= local_pairs;
    tile_prefix -= local_tiles;
    for (int j = 0; j < MAX_EXPERTS / 32; j++) {
      const int e = lane * (MAX_EXPERTS / 32) + j;
      const int count = counts[e];
      cursor[e] = pair_prefix;
      first_tile[e] = tile_prefix;
      if (e < experts) expert_offsets[e] = pair_prefix;
      pair_prefix += count;
      tile_prefix += (count + tile_pairs - 1) / tile_pairs;
    }
    if (lane == 31) {
      first_tile[MAX_EXPERTS] = tile_prefix;
      expert_offsets[experts] = pair_prefix;
      *tile_count = min(tile_prefix, max_tiles);
    }
  }
  __syncthreads();
  // Slots left out (an expert id out of range) leave the list's tail: mark it so every entry is written.
  for (int index = cursor[MAX_EXPERTS - 1] + counts[MAX_EXPERTS - 1] + thread; index < pairs; index += threads) {
    pair_slots[index] = -1;
  }
  // The tile table: each tile finds its expert by binary search over the tile prefix.
  const int total_tiles = first_tile[MAX_EXPERTS];
  for (int tile = thread; tile < max_tiles; tile += threads) {
    int4 entry = make_int4(-1, 0, 0, 0);
    if (tile < total_tiles) {
      int low = 0;
      int high = MAX_EXPERTS - 1;
      while (low < high) {  // the last expert whose first tile is <= tile
        const int middle = (low + high + 1) >> 1;
        if (first_tile[middle] <= tile) low = middle;
        else high = middle - 1;
      }
      const int within = (tile - first_tile[low]) * tile_pairs;
      int pairs_here = min(tile_pairs, counts[low] - within);
      if constexpr (FAULT == FAULT_LAST_PAIR_DROPPED) pairs_here -= within + pairs_here == counts[low];
      entry = make_int4(low, cursor[low] + within, pairs_here, 0);
    }
    reinterpret_cast<int4*>(tiles)[tile] = entry;
  }
  __syncthreads();
  // Positions, one slot a thread at a time in slot order.
  const unsigned lanes_below = (1u << lane) - 1u;
  for (int base = 0; base < pairs; base += threads) {
    const int slot = base + thread;
    const int e = slot < pairs ? __ldcg(expert_ids + slot) : -1;
    const bool valid = e >= 0 && e < experts;
    const unsigned peers = __match_any_sync(0xffffffffu, valid ? e : -1);
    const int rank_in_warp = __popc(peers & lanes_below);
    if (valid && rank_in_warp == 0) warp_counts[warp][e] = __popc(peers);
    __syncthreads();
    if (valid) {
      int position = cursor[e] + rank_in_warp;
      for (int w = 0; w < warp; w++) position += warp_counts[w][e];
      if constexpr (FAULT == FAULT_EXPERT_REVERSED) position = 2 * expert_offsets[e] + counts[e] - 1 - position;
      pair_slots[position] = slot;
    }
    __syncthreads();
    for (int expert = thread; expert < MAX_EXPERTS; expert += threads) {
      int added = 0;
      for (int w = 0; w < warps; w++) {
        added += warp_counts[w][expert];
        warp_counts[w][expert] = 0;
      }
      cursor[expert] += added;
    }
    __syncthreads();
  }
}

// A launch of one row is grouped by the warp that routed it, with no arrival and no block barrier: lane k < top_k
// holds choice k's expert (top_k <= 32, experts <= MAX_EXPERTS). The same tables as group_pairs for these ids: a valid
// slot's position counts the valid slots of lower experts and the earlier ones of its own; an expert's offset counts
// the valid slots below it; each expert's tiles follow those of the experts below it; the tail is marked as there.
template <int FAULT>
__device__ __forceinline__ void group_one_row(int expert, int* pair_slots, int* expert_offsets, int* tiles,
                                              int* tile_count, int top_k, int experts, int tile_pairs,
                                              int max_tiles) {
  const int lane = threadIdx.x & 31;
  const bool valid = lane < top_k && expert >= 0 && expert < experts;
  int position = 0;  // valid slots before this one in expert order
  int below = 0;     // valid slots of lower experts: this expert's offset
  int count = 0;     // valid slots of this expert
  bool first = true;  // no earlier slot of this expert
  int offsets[MAX_EXPERTS / 32];  // for experts lane, lane + 32, ...: the valid slots below each
#pragma unroll
  for (int s = 0; s < MAX_EXPERTS / 32; s++) offsets[s] = 0;
  for (int j = 0; j < top_k; j++) {
    const int other = __shfl_sync(0xffffffffu, expert, j);
    if (other < 0 || other >= experts) continue;
    below += other < expert;
    count += other == expert;
    position += other < expert || (other == expert && j < lane);
    first = first && !(other == expert && j < lane);
#pragma unroll
    for (int s = 0; s < MAX_EXPERTS / 32; s++) {
      const int e = lane + 32 * s;
      offsets[s] += FAULT == FAULT_ONE_ROW_OFFSETS_INCLUSIVE ? other <= e : other < e;
    }
  }
  const int valid_slots = __popc(__ballot_sync(0xffffffffu, valid));
  if (valid) pair_slots[position] = lane;
  for (int index = valid_slots + lane; index < top_k; index += 32) pair_slots[index] = -1;
#pragma unroll
  for (int s = 0; s < MAX_EXPERTS / 32; s++) {
    if (lane + 32 * s < experts) expert_offsets[lane + 32 * s] = offsets[s];
  }
  if (lane == 0) expert_offsets[experts] = valid_slots;
  // Tiles: each expert's first valid slot holds its tiles, numbered after the tiles of the experts below it.
  const int own_tiles = valid && first ? (count + tile_pairs - 1) / tile_pairs : 0;
  int first_tile = 0;
  for (int j = 0; j < top_k; j++) {
    const int other = __shfl_sync(0xffffffffu, expert, j);
    const int other_tiles = __shfl_sync(0xffffffffu, own_tiles, j);
    first_tile += other < expert ? other_tiles : 0;
  }
  const int total_tiles = __reduce_add_sync(0xffffffffu, own_tiles);
  int4* tile_entries = reinterpret_cast<int4*>(tiles);
  for (int i = 0; i < own_tiles && first_tile + i < max_tiles; i++) {
    const int within = i * tile_pairs;
    tile_entries[first_tile + i] = make_int4(expert, below + within, min(tile_pairs, count - within), 0);
  }
  for (int tile = total_tiles + lane; tile < max_tiles; tile += 32) tile_entries[tile] = make_int4(-1, 0, 0, 0);
  if (lane == 0) *tile_count = min(total_tiles, max_tiles);
}

// The grouping of a router launch of more than one row (group_routed): every block calls it once, after its rows'
// ids are written (grouping nothing when `arrivals` is null). The last block to arrive groups all the grid's ids.
// `arrivals` is one int32, zero before the first launch; the last arrival resets it, so every launch and graph
// replay finds it at zero.
template <int FAULT, int MAX_WARPS>
__device__ __forceinline__ void group_after_last_arrival(int* arrivals, int* pair_slots, int* expert_offsets,
                                                         int* tiles, int* tile_count, const int* expert_ids, int rows,
                                                         int top_k, int experts, int tile_pairs, int max_tiles) {
  if (arrivals == nullptr) return;
  __shared__ int last_arrival;
  __threadfence();  // this block's ids are visible device-wide before it counts itself in
  __syncthreads();
  if (threadIdx.x == 0) {
    last_arrival = atomicAdd(arrivals, 1) == (int)gridDim.x - 1;
    if (last_arrival && FAULT != FAULT_COUNTER_KEPT) *arrivals = 0;
  }
  __syncthreads();
  if (!last_arrival) return;
  __threadfence();  // the others fenced their ids before arriving: read them only after seeing every arrival
  group_pairs<FAULT, MAX_WARPS>(pair_slots, expert_offsets, tiles, tile_count, expert_ids, rows, top_k, experts,
                                tile_pairs, max_tiles);
}

// Ends a router launch, every thread of every block calling it once after routing: a launch of one row is grouped by
// the warp that routed it (`routed`, holding lane k's choice in `expert`) with no arrival (group_one_row); any other
// is grouped by its last block to arrive (group_after_last_arrival). Without tables (`arrivals` null) nothing is.
template <int FAULT, int MAX_WARPS>
__device__ __forceinline__ void group_routed(bool routed, int expert, int* arrivals, int* pair_slots,
                                             int* expert_offsets, int* tiles, int* tile_count, const int* expert_ids,
                                             int rows, int top_k, int experts, int tile_pairs, int max_tiles) {
  if (rows == 1) {
    if (routed && arrivals != nullptr) {
      group_one_row<FAULT>(expert, pair_slots, expert_offsets, tiles, tile_count, top_k, experts, tile_pairs,
                           max_tiles);
    }
    return;
  }
  group_after_last_arrival<FAULT, MAX_WARPS>(arrivals, pair_slots, expert_offsets, tiles, tile_count, expert_ids,
                                             rows, top_k, experts, tile_pairs, max_tiles);
}
