// The decode walk of calls of at most ATTENTION_FEW_ROWS rows (attention_few_rows_bf16_d{128,256}): four warps a query
// head, the per-row kernel's splits, tiles and partials otherwise. With a warp a head, a batch-1 decode is a few blocks
// on as many SMs, each tile of 64 keys one warp's long instruction chain with no other warp to hide it; four warps share
// it without moving a bit:
//   scores: warp w scores keys 16w..16w+15 of the tile over the whole head dim, each key's lane partials summed by
//   warp_sum's pairing tree (its offset-16 level adds lanes l and l ^ 16 for all 16 keys, then the transposed levels 8,
//   4, 2, 1 over them), so each score has tile_scores' bits;
//   softmax step: the warps' maxima and the tile's 64 probabilities pass through shared memory; the maximum is a max
//   (exact in any order), each probability the same expf, and every warp forms the tile's sum as tile_scores does
//   (warp_sum of key j + key j + 32), so all four hold the same state;
//   values: each warp keeps a quarter of the head's dims, each dim's fma chain over the tile's keys in key order, as
//   tile_values.
// Only for few rows: its blocks of 128 threads a head need more registers a head than a warp a head, so where a call
// has many blocks to run (many rows, long contexts) fewer fit an SM and the warp-a-head kernel is faster.
#pragma once
#include "attention.cuh"

#define FEW_ROWS_WARPS 4
#define FEW_ROWS_KEYS (ATTENTION_TILE_KEYS / FEW_ROWS_WARPS)
// Per head in shared memory after the tiles: the tile's 64 probabilities, then each warp's maximum.
#define FEW_ROWS_EXCHANGE (ATTENTION_TILE_KEYS + FEW_ROWS_WARPS)

// This lane's score of key first + (lane & 15) of the tile (lanes l and l + 16 alike; −inf past `count`).
template <int E>
__device__ __forceinline__ float score_16_keys(const float (&query)[E], const bf16* tile, int first, int count,
                                               float scale) {
  constexpr int D = 32 * E;
  constexpr int PERMUTED = 8;  // partial i holds key first + (i ^ (lane & 8)): level 8 needs no select
  if (first >= count) return -INFINITY;
  const int lane = threadIdx.x & 31;
  float partial[32];
#pragma unroll
  for (int i = 0; i < 16; i++) {
    float key[E];
    load_bf16_run<E>(tile + (first + (i ^ (lane & PERMUTED))) * D + lane * E, key);
    partial[i] = 0.0f;
#pragma unroll
    for (int e = 0; e < E; e++) partial[i] = __fmaf_rn(query[e], key[e], partial[i]);
  }
#pragma unroll
  for (int i = 0; i < 16; i++) partial[i] = __fadd_rn(partial[i], __shfl_xor_sync(0xffffffffu, partial[i], 16));
  transposed_level<8, PERMUTED>(partial);
  transposed_level<4, PERMUTED>(partial);
  transposed_level<2, PERMUTED>(partial);
  transposed_level<1, PERMUTED>(partial);
  return first + (lane & 15) < count ? __fmul_rn(partial[0], scale) : -INFINITY;
}

// Grid (rows, kv_heads · subgroups, Z), block 128 · heads (heads = group / subgroups): block (x, y, z) walks row x's
// query heads y · heads .. y · heads + heads − 1 (warps 4h .. 4h + 3 head h), splits z, z + Z, ..., each split's state
// written as a partial for attention_combine (y = block_y: a shared call's grid has the per-row walk's blocks first);
// `shared`: only a call few_rows_walk_takes gives it (attention.cuh). Dynamic shared memory: the K and V tiles, then
// the heads' exchange (heads · FEW_ROWS_EXCHANGE floats).
template <int D, int VARIANT>
__device__ __forceinline__ void attention_few_rows(float* workspace, const bf16* q, const bf16* keys,
                                                   const bf16* values, const int* row_table, int rows,
                                                   int query_heads, int kv_heads, int slots, int capacity,
                                                   int max_splits, float scale, unsigned block_y, bool shared) {
  constexpr int E = D / 32;                   // a lane's dims of q·k
  constexpr int V = D / (32 * FEW_ROWS_WARPS);  // a lane's dims of the accumulator
  extern __shared__ __align__(16) unsigned char attention_shared[];
  bf16* key_tile = reinterpret_cast<bf16*>(attention_shared);
  bf16* value_tile = key_tile + ATTENTION_TILE_KEYS * D;
  float* exchange = reinterpret_cast<float*>(value_tile + ATTENTION_TILE_KEYS * D);
  const int heads_here = blockDim.x / (32 * FEW_ROWS_WARPS);
  const int lane = threadIdx.x & 31;
  const int local_head = threadIdx.x / (32 * FEW_ROWS_WARPS);
  const int quarter = (threadIdx.x >> 5) % FEW_ROWS_WARPS;  // the head's warp this is
  const int subgroups = query_heads / kv_heads / heads_here;
  const int kv_head = block_y / subgroups;
  const int head = block_y * heads_here + local_head;
  const int row = blockIdx.x;
  const int dims = quarter * (D / FEW_ROWS_WARPS) + lane * V;  // this lane's first accumulator dim
  float* shared_head = exchange + local_head * FEW_ROWS_EXCHANGE;
  const long long head_row = (long long)row * query_heads + head;
  int slot, position;
  // A shared call with many splits to walk is the per-row walk's (the launch's other blocks).
  if (shared && !few_rows_walk_takes<VARIANT>(row_table, rows, slots, capacity, kv_heads)) return;
  // A row outside the slabs writes nothing (the combine writes NaN); the whole block is one row.
  if (row >= rows || !read_row(row_table, row, slots, capacity, slot, position)) return;
  const int last = last_key<VARIANT>(position);
  const int splits = split_count(last);
  const int shift = (position - row) & (ATTENTION_TILE_KEYS - 1);
  float query[E];
  load_bf16_run<E>(q + head_row * D + lane * E, query);
  SoftmaxState<V> part;
  empty_state(part);
  int split = blockIdx.z;
  const long long slot_row = (long long)slot * capacity;
  if (split >= splits) return;
  int begin = split * ATTENTION_SPLIT_KEYS;
  int end = min(begin + ATTENTION_SPLIT_KEYS, last + 1);
  int start = begin;
  int next = tile_end<VARIANT>(start, begin, shift);
  stage_tile<D>(key_tile, keys, slot_row + start, kv_heads, kv_head, min(next, end) - start);
  for (;;) {
    const int count = min(next, end) - start;
    if (start == begin) empty_state(part);
    stage_tile<D>(value_tile, values, slot_row + start, kv_heads, kv_head, count);
    attention_wait_all_but_one();
    __syncthreads();  // the K tile staged
    const int first = FEW_ROWS_KEYS * quarter;
    const float score = score_16_keys<E>(query, key_tile, first, count, scale);
    const float warp_maximum = warp_max(score);
    if (lane == 0) shared_head[ATTENTION_TILE_KEYS + quarter] = warp_maximum;
    __syncthreads();  // every warp's maximum; the K tile is free
    float tile_maximum = shared_head[ATTENTION_TILE_KEYS];
#pragma unroll
    for (int w = 1; w < FEW_ROWS_WARPS; w++) tile_maximum = fmaxf(tile_maximum, shared_head[ATTENTION_TILE_KEYS + w]);
    const float maximum = fmaxf(part.maximum, tile_maximum);
    const int key = first + (lane & (FEW_ROWS_KEYS - 1));
    if (lane < FEW_ROWS_KEYS) shared_head[key] = key < count ? expf(score - maximum) : 0.0f;
    const float rescale = expf(part.maximum - maximum);
    part.maximum = maximum;
    const NextTile following = stage_next_tile<D, VARIANT>(key_tile, keys, slot_row, kv_heads, kv_head, split, begin,
                                                           end, next, gridDim.z, splits, last, shift);
    __syncthreads();  // the tile's probabilities; the V tile staged
    const float low = shared_head[lane];
    const float high = shared_head[32 + lane];
    // The control's fault: each half summed over the warp apart, then the two added (accurate, other bits).
    const float tile_sum = VARIANT == ATTENTION_FEW_ROWS_SUM_BY_HALVES ? __fadd_rn(warp_sum(low), warp_sum(high))
                                                                       : warp_sum(__fadd_rn(low, high));
    part.sum = __fadd_rn(__fmul_rn(part.sum, rescale), tile_sum);
#pragma unroll
    for (int v = 0; v < V; v++) part.acc[v] = __fmul_rn(part.acc[v], rescale);
#pragma unroll 8
    for (int j = 0; j < ATTENTION_TILE_KEYS; j++) {
      if (j < count) {
        float value[V];
        load_bf16_run<V>(value_tile + j * D + dims, value);
        const float probability = shared_head[j];
#pragma unroll
        for (int v = 0; v < V; v++) part.acc[v] = __fmaf_rn(probability, value[v], part.acc[v]);
      }
    }
    __syncthreads();  // the V tile and the exchange are free
    if (following.split != split || !following.more) {
      // The split ends: its state as a partial, as the per-row walk writes it.
      const long long entry = head_row * max_splits + split;
#pragma unroll
      for (int v = 0; v < V; v++) workspace[entry * D + dims + v] = part.acc[v];
      if (lane == 0 && quarter == 0) {
        float* stats = workspace + (long long)rows * query_heads * max_splits * D + 2 * entry;
        stats[0] = part.maximum;
        stats[1] = part.sum;
      }
    }
    if (!following.more) break;
    split = following.split;
    begin = following.begin;
    end = following.end;
    start = following.start;
    next = following.next;
  }
}

// A few-rows call's block after its wait. A call whose slab holds more splits than the few-rows walk takes is shared
// (fold = ATTENTION_FOLD_SHARED): its grid starts with kv_heads blocks of the per-row walk, a KV head's whole group
// each (32 · group = the few-rows block's 128 · heads threads), which walk the calls the few-rows blocks leave. One
// launch, so a short call pays no second kernel; the same bits whichever walk a call gets. The per-row walk is a call
// of its own, so that each walk is allocated registers apart.
template <int D, int VARIANT>
__device__ __forceinline__ void attention_few_rows_call(float* workspace, const bf16* q, const bf16* keys,
                                                        const bf16* values, const int* row_table, int rows,
                                                        int query_heads, int kv_heads, int slots, int capacity,
                                                        int max_splits, float scale, bool shared) {
  const int per_row_blocks = shared ? kv_heads : 0;
  if ((int)blockIdx.y < per_row_blocks) {
    if (VARIANT == ATTENTION_SHARED_PER_ROW_IDLE) return;
    if (few_rows_walk_takes<VARIANT>(row_table, rows, slots, capacity, kv_heads)) return;
    attention_rows_apart<D, 1, VARIANT>(nullptr, workspace, q, nullptr, 0, 0, keys, values, row_table, rows,
                                        query_heads, kv_heads, slots, capacity, max_splits, scale, 0);
    return;
  }
  attention_few_rows<D, VARIANT>(workspace, q, keys, values, row_table, rows, query_heads, kv_heads, slots, capacity,
                                 max_splits, scale, blockIdx.y - per_row_blocks, shared);
}

// Whether a spread block (z > 0) of a few-rows call has nothing to do: attention_block_idle, or a shared call the
// other walk takes (z = 0 waits whatever the call, then returns in attention_few_rows_call).
template <int VARIANT>
__device__ __forceinline__ bool few_rows_block_idle(const int* row_table, int rows, int slots, int capacity,
                                                    int kv_heads, bool shared) {
  if (attention_block_idle<VARIANT>(row_table, rows, slots, capacity)) return true;
  if (!shared || blockIdx.z == 0) return false;
  const bool per_row_block = (int)blockIdx.y < kv_heads;
  return few_rows_walk_takes<VARIANT>(row_table, rows, slots, capacity, kv_heads) == per_row_block;
}
