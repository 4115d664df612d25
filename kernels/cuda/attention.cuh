// The attention family's device code, shared by kernels/cuda/attention.cu and its planted controls (a variant
// argument selects the control's bug; the real kernels use the exact variants). attention.cu's header says what the
// kernels compute, their layouts, rounding points and reduction order.
#pragma once
#include "common.cuh"

#define ATTENTION_TILE_KEYS 64
#define ATTENTION_SPLIT_KEYS 256
#define ATTENTION_MAX_PREPARE_DIM 256
// Rows per block of the on-chip fold (fold = 1): the rows of one slot among them share every staged tile.
#define ATTENTION_ROWS_PER_BLOCK 4
// Decode calls of at most this many rows at head dim 128 or 256 run attention_few_rows.cuh's walk, four warps a head
// (src/backend/cuda/ops/attention.ts FEW_ROWS_MOST_ROWS); larger ones a warp a head.
#define ATTENTION_FEW_ROWS 4
// ... while the per-row walk would have at most this many blocks of work (the splits the call's rows reach, times
// kv_heads; src/backend/cuda/ops/attention.ts FEW_ROWS_MOST_BLOCKS): about one an SM, where four warps a head pay.
// Past it (long contexts, measured in docs/gpu.md) the per-row walk, whose blocks the launch then holds too
// (fold = ATTENTION_FOLD_SHARED), takes the call: its blocks fill the SMs and each stages a tile for a whole group.
#define ATTENTION_FEW_ROWS_MOST_BLOCKS 128
// fold = 2: a few-rows launch whose grid also holds the per-row walk's blocks, each walk taking the calls the other
// leaves (where the slab holds calls past the bound; 0: spread, the few-rows walk's alone; 1: folded on chip).
#define ATTENTION_FOLD_SHARED 2

enum PrepareVariant { PREPARE_EXACT = 0, PREPARE_KEY_ROW_OFF_BY_ONE = 1 };
enum AttentionVariant {
  ATTENTION_EXACT = 0,
  ATTENTION_SHORT_BY_ONE = 1,
  ATTENTION_TILES_FROM_CALL = 2,
  ATTENTION_GROUP_FIRST_ROW_SPLITS = 3,
  ATTENTION_GROUPED_SCORES_LEVELS_REVERSED = 4,
  ATTENTION_FEW_ROWS_SUM_BY_HALVES = 5,
  ATTENTION_SHARED_PER_ROW_IDLE = 6
};

// One row table entry; false when its slot or position lies outside the slabs.
__device__ __forceinline__ bool read_row(const int* row_table, int row, int slots, int capacity, int& slot,
                                         int& position) {
  slot = row_table[2 * row];
  position = row_table[2 * row + 1];
  return slot >= 0 && slot < slots && position >= 0 && position < capacity;
}

// Where a (row, head)'s projected values come from: the projections in global memory (attention_prepare_bf16), or
// a block's shared copy of the values it has just combined (attention_qkv_prepare.cuh). x is the query (or key) row
// of the head, v its value row (key heads only).
struct ProjectedHead {
  const bf16* x;
  const bf16* v;
};

// The rotary inverse frequency of pair i: theta^(−2i / rotary_dims), in fp64 and rounded once to fp32.
__device__ __forceinline__ float rotary_inverse_frequency(int i, int rotary_dims, float theta) {
  const float exponent = (float)(2 * i) / (float)rotary_dims;
  return 1.0f / (float)pow((double)theta, (double)exponent);
}

// A prepare block's (row, head): blocks walk the query heads, then the key heads, of row 0, then of row 1, ...
struct PrepareBlock {
  int row;
  int head;
};

__device__ __forceinline__ PrepareBlock prepare_block(int query_heads, int kv_heads) {
  const int heads = query_heads + kv_heads;
  const int row = blockIdx.x / heads;
  return {row, (int)blockIdx.x - row * heads};
}

// What a prepare block may load and compute before it waits for the previous grid (nothing a step writes): the
// thread's norm weight (column t) and its rotary pair's inverse frequency (pair t). `loaded` only where the block's
// threads cover the head's columns in one pass (attention_qkv_prepare's blocks); else prepare_head does both itself.
struct PrepareEarly {
  float weight;
  float inverse_frequency;
  bool loaded;
};

__device__ __forceinline__ PrepareEarly prepare_early(const bf16* q_norm, const bf16* k_norm, bool is_query,
                                                      int head_dim, int rotary_dims, float theta) {
  PrepareEarly early = {};
  early.loaded = (int)blockDim.x >= head_dim;
  const int t = threadIdx.x;
  if (early.loaded && t < head_dim) early.weight = to_float((is_query ? q_norm : k_norm)[t]);
  if (early.loaded && t < rotary_dims / 2) early.inverse_frequency = rotary_inverse_frequency(t, rotary_dims, theta);
  return early;
}

// One (row, head) of the prepare: the query head's q normed and rotated into q_out, or the key head's V copied and K
// normed and rotated into the slabs at the row's (slot, position). The norm's squares are summed by the first
// `sum_threads` threads, column t, t + sum_threads, ... each (rms_norm_bf16's mapping for head_dim columns), and
// block_sum adds them with the block's other threads giving +0: so any blockDim at least sum_threads gives the bits
// of a block of sum_threads. Every other loop computes each column on its own. Returns before any barrier for a key
// head it does not write (a row outside the slabs), uniformly for the block.
template <int VARIANT>
__device__ __forceinline__ void prepare_head(bf16* q_out, bf16* keys, bf16* values, ProjectedHead projected,
                                             const bf16* q_norm, const bf16* k_norm, int row, int head,
                                             int query_heads, int kv_heads, int head_dim, int rotary_dims,
                                             float theta, int interleaved, bool valid, int slot, int position,
                                             int capacity, float eps, int sum_threads, float* normed,
                                             float* scratch, const PrepareEarly& early) {
  const bool is_query = head < query_heads;
  const bf16* x = projected.x;
  const bf16* weight;
  bf16* out;
  if (is_query) {
    weight = q_norm;
    out = q_out + ((long long)row * query_heads + head) * head_dim;
    if (!valid) {
      for (int dim = threadIdx.x; dim < head_dim; dim += blockDim.x) out[dim] = to_bf16(NAN);
      return;
    }
  } else {
    const int kv_head = head - query_heads;
    const int key_row = VARIANT == PREPARE_KEY_ROW_OFF_BY_ONE ? position + 1 : position;
    if (!valid || key_row >= capacity) return;
    const long long value_target = (((long long)slot * capacity + position) * kv_heads + kv_head) * head_dim;
    for (int dim = threadIdx.x; dim < head_dim; dim += blockDim.x) values[value_target + dim] = projected.v[dim];
    weight = k_norm;
    out = keys + (((long long)slot * capacity + key_row) * kv_heads + kv_head) * head_dim;
  }
  float squares = 0.0f;
  if ((int)threadIdx.x < sum_threads) {
    for (int column = threadIdx.x; column < head_dim; column += sum_threads) {
      const float value = to_float(x[column]);
      squares += value * value;
    }
  }
  const float scale = rsqrtf(block_sum(squares, scratch) / (float)head_dim + eps);
  for (int column = threadIdx.x; column < head_dim; column += blockDim.x) {
    const float w = early.loaded ? early.weight : to_float(weight[column]);
    normed[column] = to_float(to_bf16(to_float(x[column]) * scale * (1.0f + w)));
  }
  __syncthreads();
  const int half = rotary_dims / 2;
  const float rotary_position = (float)position;
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const float inverse_frequency =
        early.loaded ? early.inverse_frequency : rotary_inverse_frequency(i, rotary_dims, theta);
    const float angle = rotary_position * inverse_frequency;
    double sine, cosine;
    sincos((double)angle, &sine, &cosine);
    const int first = interleaved ? 2 * i : i;
    const int second = interleaved ? 2 * i + 1 : i + half;
    const double a = (double)normed[first];
    const double b = (double)normed[second];
    out[first] = __double2bfloat16(a * cosine - b * sine);
    out[second] = __double2bfloat16(b * cosine + a * sine);
  }
  for (int dim = rotary_dims + threadIdx.x; dim < head_dim; dim += blockDim.x) out[dim] = to_bf16(normed[dim]);
}

// One block per (row, head) over query heads then key heads; blockDim as rms_norm_bf16 uses for head_dim columns,
// so the norm's sum runs in the same order and q/k come out as rms_norm_bf16 followed by rope_bf16 would give them.
template <int VARIANT>
__device__ __forceinline__ void attention_prepare(bf16* q_out, bf16* keys, bf16* values, const bf16* q_proj,
                                                  const bf16* k_proj, const bf16* v_proj, const bf16* q_norm,
                                                  const bf16* k_norm, const int* row_table, int rows,
                                                  int query_heads, int kv_heads, int head_dim, int rotary_dims,
                                                  float theta, int interleaved, int gated, int slots, int capacity,
                                                  float eps) {
  __shared__ float normed[ATTENTION_MAX_PREPARE_DIM];
  __shared__ float scratch[32];
  const auto [row, head] = prepare_block(query_heads, kv_heads);
  if (row >= rows) return;
  int slot, position;
  const bool valid = read_row(row_table, row, slots, capacity, slot, position);
  ProjectedHead projected;
  if (head < query_heads) {
    const long long query_stride = (long long)head_dim * (gated ? 2 : 1);
    projected = {q_proj + ((long long)row * query_heads + head) * query_stride, nullptr};
  } else {
    const long long source = ((long long)row * kv_heads + head - query_heads) * head_dim;
    projected = {k_proj + source, v_proj + source};
  }
  prepare_head<VARIANT>(q_out, keys, values, projected, q_norm, k_norm, row, head, query_heads, kv_heads, head_dim,
                        rotary_dims, theta, interleaved, valid, slot, position, capacity, eps, blockDim.x, normed,
                        scratch, PrepareEarly{});
}

// E ≥ 2 consecutive bf16 (4·E-byte aligned) widened to fp32, a 32-bit word at a time.
template <int E>
__device__ __forceinline__ void load_bf16_words(const bf16* source, float* out) {
  uint32_t words[E / 2];
  if constexpr (E == 8) {
    const uint4 raw = *reinterpret_cast<const uint4*>(source);
    words[0] = raw.x, words[1] = raw.y, words[2] = raw.z, words[3] = raw.w;
  } else if constexpr (E == 4) {
    const uint2 raw = *reinterpret_cast<const uint2*>(source);
    words[0] = raw.x, words[1] = raw.y;
  } else {
    words[0] = *reinterpret_cast<const uint32_t*>(source);
  }
#pragma unroll
  for (int i = 0; i < E / 2; i++) {
    out[2 * i] = __uint_as_float(words[i] << 16);
    out[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
  }
}

// E consecutive bf16 (E = 1, 2, 4 or 8; 2·E-byte aligned) widened to fp32, exactly.
template <int E>
__device__ __forceinline__ void load_bf16_run(const bf16* source, float* out) {
  if constexpr (E == 1) {
    out[0] = __uint_as_float(static_cast<uint32_t>(*reinterpret_cast<const uint16_t*>(source)) << 16);
  } else {
    load_bf16_words<E>(source, out);
  }
}

// Softmax state of one query head over some keys, the lane's E = D/32 consecutive dims of the accumulator.
template <int E>
struct SoftmaxState {
  float maximum;
  float sum;
  float acc[E];
};

template <int E>
__device__ __forceinline__ void empty_state(SoftmaxState<E>& state) {
  state.maximum = -INFINITY;
  state.sum = 0.0f;
#pragma unroll
  for (int e = 0; e < E; e++) state.acc[e] = 0.0f;
}

// state ← state ⊕ part, the one combine both the folding attention kernel and the combine kernel apply (explicit
// round-to-nearest intrinsics, so no contraction can differ between the two).
template <int E>
__device__ __forceinline__ void combine_state(SoftmaxState<E>& state, const SoftmaxState<E>& part) {
  const float maximum = fmaxf(state.maximum, part.maximum);
  const float mine = expf(state.maximum - maximum);
  const float theirs = expf(part.maximum - maximum);
  state.maximum = maximum;
  state.sum = __fadd_rn(__fmul_rn(state.sum, mine), __fmul_rn(part.sum, theirs));
#pragma unroll
  for (int e = 0; e < E; e++) state.acc[e] = __fadd_rn(__fmul_rn(state.acc[e], mine), __fmul_rn(part.acc[e], theirs));
}

__device__ __forceinline__ float warp_max(float value) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// One 16-byte global → shared copy in flight (cp.async, sm_80 and later); the caller commits and waits.
__device__ __forceinline__ void attention_copy_16(void* shared, const void* global) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(address), "l"(global) : "memory");
}
__device__ __forceinline__ void attention_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void attention_wait_all_but_one() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
__device__ __forceinline__ void attention_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

// Starts copying `count` consecutive slab rows (one KV head) into the tile and commits them as one group; every
// thread of the block takes part.
template <int D>
__device__ __forceinline__ void stage_tile(bf16* tile, const bf16* slab, long long first_row, int kv_heads,
                                           int kv_head, int count) {
  constexpr int CHUNKS = D / 8;
  const int total = count * CHUNKS;
  for (int chunk = threadIdx.x; chunk < total; chunk += blockDim.x) {
    const int key = chunk / CHUNKS;
    const int part = chunk - key * CHUNKS;
    attention_copy_16(tile + chunk * 8, slab + ((first_row + key) * kv_heads + kv_head) * D + part * 8);
  }
  attention_commit();
}

// Splits of a row: keys 0..last cut at multiples of ATTENTION_SPLIT_KEYS.
__device__ __forceinline__ int split_count(int last) {
  return last < 0 ? 0 : last / ATTENTION_SPLIT_KEYS + 1;
}

template <int VARIANT>
__device__ __forceinline__ int last_key(int position) {
  return VARIANT == ATTENTION_SHORT_BY_ONE ? position - 1 : position;
}

// Whether the few-rows walk takes a call of at most ATTENTION_FEW_ROWS rows (else the per-row walk does): every block
// of either walk reads the same rows, so exactly one walk writes each row's partials. The same bits either way. Lane
// r reads row r (the rows' loads at once, not one after another); every thread of the warp gets the sum.
template <int VARIANT>
__device__ __forceinline__ bool few_rows_walk_takes(const int* row_table, int rows, int slots, int capacity,
                                                    int kv_heads) {
  int blocks = 0;
  for (int row = threadIdx.x & 31; row < rows; row += 32) {
    int slot, position;
    if (read_row(row_table, row, slots, capacity, slot, position)) {
      blocks += split_count(last_key<VARIANT>(position)) * kv_heads;
    }
  }
  return __reduce_add_sync(0xffffffffu, blocks) <= ATTENTION_FEW_ROWS_MOST_BLOCKS;
}

// The end of the tile that starts at `start` in the split that starts at `begin`: 64 keys on (`begin` is a multiple
// of 64, so every tile starts at a multiple of 64); the control variant cuts each split's first tile at the call's
// first position instead.
template <int VARIANT>
__device__ __forceinline__ int tile_end(int start, int begin, int call_shift) {
  if (VARIANT == ATTENTION_TILES_FROM_CALL && start == begin && call_shift > 0) return start + call_shift;
  return start + ATTENTION_TILE_KEYS;
}

// Where a block's walk goes after the tile [start, next) of the split [begin, end): on in this split, else the first
// tile of its next split (split + stride); `more` is false past its last split. Stages the next K tile, its copy in
// flight while this tile's values are used, or at the end waits for every copy.
struct NextTile {
  int split, begin, end, start, next;
  bool more;
};

template <int D, int VARIANT>
__device__ __forceinline__ NextTile stage_next_tile(bf16* key_tile, const bf16* keys, long long slot_row, int kv_heads,
                                                    int kv_head, int split, int begin, int end, int next, int stride,
                                                    int splits, int last, int shift) {
  NextTile t = {split, begin, end, next, 0, false};
  if (t.start >= end) {
    t.split = split + stride;
    t.begin = t.split * ATTENTION_SPLIT_KEYS;
    t.end = min(t.begin + ATTENTION_SPLIT_KEYS, last + 1);
    t.start = t.begin;
  }
  t.more = t.split < splits;
  t.next = tile_end<VARIANT>(t.start, t.begin, shift);
  if (t.more) {
    const int next_count = min(t.next, t.end) - t.start;
    stage_tile<D>(key_tile, keys, slot_row + t.start, kv_heads, kv_head, next_count);
    attention_wait_all_but_one();
  } else {
    attention_wait_all();
  }
  return t;
}

// The transposed butterfly's load order: lane l computes partial i of a half-tile from key i ^ (l & this mask), so
// that its levels at offsets 16 and 8 keep partial i and send partial i + offset with no select.
#define ATTENTION_PERMUTED_KEY_BITS 24

// One level of the transposed butterfly (offset WIDTH, 2·WIDTH partials in, WIDTH out): partials i and i + WIDTH
// hold two keys that differ in bit WIDTH; the lane keeps the one whose bit is its own and sends its partner the
// other, adding kept + received as warp_sum does. Keys in a PERMUTED bit are already in the lane's order (no select).
template <int WIDTH, int PERMUTED>
__device__ __forceinline__ void transposed_level(float (&partial)[32]) {
  const bool upper = ((threadIdx.x & 31) & WIDTH) != 0;
#pragma unroll
  for (int i = 0; i < WIDTH; i++) {
    if constexpr ((PERMUTED & WIDTH) != 0) {
      partial[i] = __fadd_rn(partial[i], __shfl_xor_sync(0xffffffffu, partial[i + WIDTH], WIDTH));
    } else {
      const float send = upper ? partial[i] : partial[i + WIDTH];
      const float keep = upper ? partial[i + WIDTH] : partial[i];
      partial[i] = __fadd_rn(keep, __shfl_xor_sync(0xffffffffu, send, WIDTH));
    }
  }
}

// Lane l's partial of each of 32 keys in, key k0 + l's full sum out: the pairing tree of warp_sum (offsets 16, 8, 4,
// 2, 1) over 32 keys at once, 31 shuffles instead of 160, every key's sum warp_sum's bits. Partial i holds key
// i ^ (lane & PERMUTED) on entry.
template <int PERMUTED>
__device__ __forceinline__ float transposed_warp_sum(float (&partial)[32]) {
  transposed_level<16, PERMUTED>(partial);
  transposed_level<8, PERMUTED>(partial);
  transposed_level<4, PERMUTED>(partial);
  transposed_level<2, PERMUTED>(partial);
  transposed_level<1, PERMUTED>(partial);
  return partial[0];
}

// One level of the control's tree (offset WIDTH, 32 / WIDTH partials in): partials 2i and 2i + 1 differ in bit WIDTH.
template <int WIDTH>
__device__ __forceinline__ void transposed_level_reversed(float (&partial)[32]) {
  const bool upper = ((threadIdx.x & 31) & WIDTH) != 0;
#pragma unroll
  for (int i = 0; i < 16 / WIDTH; i++) {
    const float send = upper ? partial[2 * i] : partial[2 * i + 1];
    const float keep = upper ? partial[2 * i + 1] : partial[2 * i];
    partial[i] = __fadd_rn(keep, __shfl_xor_sync(0xffffffffu, send, WIDTH));
  }
}

// The control's tree: the same transposition with the levels in the other order (offsets 1, 2, 4, 8, 16), partials
// in key order on entry: accurate, but other bits than warp_sum's.
__device__ __forceinline__ float transposed_warp_sum_levels_reversed(float (&partial)[32]) {
  transposed_level_reversed<1>(partial);
  transposed_level_reversed<2>(partial);
  transposed_level_reversed<4>(partial);
  transposed_level_reversed<8>(partial);
  transposed_level_reversed<16>(partial);
  return partial[0];
}

// One tile's scores for one query head (the warp's) of each of ROWS rows: q·k over the row's own `count[r]` keys of
// the tile (0: the row sits this tile out), times scale; key j's score lands in lane j (low, the first 32 keys) or lane
// j − 32 (high). Each half-tile of 32 keys: every lane forms its fma-chain partial over its E dims for each key and
// row (each key row read once for all rows), then each row's 32 partials go through the transposed butterfly, which
// gives every key warp_sum's bits; keys past the row's count (their partials may have read stale tile memory) become
// −inf after it. Then the online softmax's step: the new maximum, the tile's probabilities (left in low and high), the
// rescaled sum and accumulator. Every warp of the block calls it with the same counts.
template <int E, int ROWS, int VARIANT>
__device__ __forceinline__ void tile_scores(SoftmaxState<E> (&state)[ROWS], float (&low)[ROWS], float (&high)[ROWS],
                                            const float (&query)[ROWS][E], const bf16* tile,
                                            const int (&count)[ROWS], int tile_count, float scale) {
  constexpr int D = 32 * E;
  constexpr bool REVERSED = VARIANT == ATTENTION_GROUPED_SCORES_LEVELS_REVERSED && ROWS > 1;
  constexpr int PERMUTED = REVERSED ? 0 : ATTENTION_PERMUTED_KEY_BITS;
  const int lane = threadIdx.x & 31;
  // The lane's row of key 8g + (0..7) of a half-tile's permuted order, for each group g of 8 keys.
  const bf16* key_rows[4];
#pragma unroll
  for (int g = 0; g < 4; g++) key_rows[g] = tile + ((8 * g) ^ (lane & PERMUTED)) * D + lane * E;
  float low_score[ROWS], high_score[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; r++) low_score[r] = high_score[r] = -INFINITY;
#pragma unroll
  for (int half = 0; half < 2; half++) {
    const int first = 32 * half;
    if (first >= tile_count) break;
    float partial[ROWS][32];
#pragma unroll
    for (int i = 0; i < 32; i++) {
      float key[E];
      load_bf16_run<E>(key_rows[i >> 3] + (first + (i & 7)) * D, key);
#pragma unroll
      for (int r = 0; r < ROWS; r++) {
        partial[r][i] = 0.0f;
#pragma unroll
        for (int e = 0; e < E; e++) partial[r][i] = __fmaf_rn(query[r][e], key[e], partial[r][i]);
      }
    }
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
      if (first < count[r]) {
        const float sum =
            REVERSED ? transposed_warp_sum_levels_reversed(partial[r]) : transposed_warp_sum<PERMUTED>(partial[r]);
        const float score = first + lane < count[r] ? __fmul_rn(sum, scale) : -INFINITY;
        if (half == 0) {
          low_score[r] = score;
        } else {
          high_score[r] = score;
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < ROWS; r++) {
    if (count[r] > 0) {
      SoftmaxState<E>& s = state[r];
      const float maximum = fmaxf(s.maximum, warp_max(fmaxf(low_score[r], high_score[r])));
      low[r] = lane < count[r] ? expf(low_score[r] - maximum) : 0.0f;
      high[r] = lane + 32 < count[r] ? expf(high_score[r] - maximum) : 0.0f;
      const float rescale = expf(s.maximum - maximum);
      s.maximum = maximum;
      s.sum = __fadd_rn(__fmul_rn(s.sum, rescale), warp_sum(__fadd_rn(low[r], high[r])));
#pragma unroll
      for (int e = 0; e < E; e++) s.acc[e] = __fmul_rn(s.acc[e], rescale);
    }
  }
}

// The tile's values into each row's accumulator: key j's probability (from lane j of low or lane j − 32 of high)
// times its value row, added in key order over the row's own `count[r]` keys. Each value row is read once.
template <int E, int ROWS>
__device__ __forceinline__ void tile_values(SoftmaxState<E> (&state)[ROWS], const float (&low)[ROWS],
                                            const float (&high)[ROWS], const bf16* tile, const int (&count)[ROWS],
                                            int tile_count) {
  constexpr int D = 32 * E;
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int j = 0; j < ATTENTION_TILE_KEYS; j++) {
    if (j < tile_count) {
      float value[E];
      load_bf16_run<E>(tile + j * D + lane * E, value);
#pragma unroll
      for (int r = 0; r < ROWS; r++) {
        if (j < count[r]) {
          const float probability = __shfl_sync(0xffffffffu, j < 32 ? low[r] : high[r], j & 31);
#pragma unroll
          for (int e = 0; e < E; e++) state[r].acc[e] = __fmaf_rn(probability, value[e], state[r].acc[e]);
        }
      }
    }
  }
}

// acc / sum rounded to bf16, then (gated) times sigmoid(gate) rounded again; the lane's E dims of one head.
template <int E>
__device__ __forceinline__ void write_output(bf16* out, const bf16* gate, const SoftmaxState<E>& state) {
#pragma unroll
  for (int e = 0; e < E; e++) {
    const bf16 attended = to_bf16(__fdiv_rn(state.acc[e], state.sum));
    if (gate == nullptr) {
      out[e] = attended;
    } else {
      const float sigmoid = __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-to_float(gate[e]))));
      out[e] = to_bf16(__fmul_rn(to_float(attended), sigmoid));
    }
  }
}

// The on-chip fold's state of (row r of the block, this thread) in shared memory, thread-minor: [ROWS][E + 2][threads].
template <int E>
__device__ __forceinline__ void load_state(SoftmaxState<E>& state, const float* fold, int r) {
  const float* base = fold + r * (E + 2) * blockDim.x + threadIdx.x;
#pragma unroll
  for (int e = 0; e < E; e++) state.acc[e] = base[e * blockDim.x];
  state.maximum = base[E * blockDim.x];
  state.sum = base[(E + 1) * blockDim.x];
}

template <int E>
__device__ __forceinline__ void store_state(float* fold, int r, const SoftmaxState<E>& state) {
  float* base = fold + r * (E + 2) * blockDim.x + threadIdx.x;
#pragma unroll
  for (int e = 0; e < E; e++) base[e * blockDim.x] = state.acc[e];
  base[E * blockDim.x] = state.maximum;
  base[(E + 1) * blockDim.x] = state.sum;
}

// Whether a spread block (z > 0) finds no split of its row at z, so has nothing to walk or write: such a block may
// return before waiting for the previous kernel, where a short context would otherwise hold its scheduling behind
// that wait (thousands of idle blocks a launch at batch 1). The row table is written by the host before the call,
// never by a kernel, so reading it first is safe; block z = 0 always waits, so the grid still ends after its
// predecessor and the next kernel's wait keeps its meaning.
template <int VARIANT>
__device__ __forceinline__ bool attention_block_idle(const int* row_table, int rows, int slots, int capacity) {
  if (blockIdx.z == 0) return false;
  int slot, position;
  if ((int)blockIdx.x >= rows || !read_row(row_table, blockIdx.x, slots, capacity, slot, position)) return true;
  return (int)blockIdx.z >= split_count(last_key<VARIANT>(position));
}

// The rows [first_row, first_row + ROWS) of the call for one KV head (warp w: query head kv_head·group + w).
// Rows of one slot walk together: each 64-key K or V tile is staged once (cp.async, the next stage in flight while
// this one is used) for every row of the group, and each (row, head) runs exactly its own walk on it: the splits of
// its keys 0..last at multiples of ATTENTION_SPLIT_KEYS, each split's tiles from its start, its own key count in each
// tile (tile_scores, tile_values), the splits' states folded in order (fold = 1, on chip) or written one by one as
// partials (fold = 0; split z, z + Z, ... of grid z extent Z). A row's bits therefore depend only on its slot's keys
// and its position, never on which rows share its block. Rows of other slots in the same block walk after, as a group
// of their own; rows outside the slabs write NaN outputs (fold = 1) or nothing (fold = 0, the combine writes NaN).
template <int D, int ROWS, int VARIANT>
__device__ __forceinline__ void attend_rows(bf16* out, float* workspace, const bf16* q, const bf16* gate,
                                            long long gate_row_stride, long long gate_head_stride, const bf16* keys,
                                            const bf16* values, const int* row_table, int rows, int query_heads,
                                            int kv_heads, int slots, int capacity, int max_splits, float scale,
                                            int fold, unsigned char* shared) {
  constexpr int E = D / 32;
  bf16* key_tile = reinterpret_cast<bf16*>(shared);
  bf16* value_tile = key_tile + ATTENTION_TILE_KEYS * D;
  float* fold_state = reinterpret_cast<float*>(value_tile + ATTENTION_TILE_KEYS * D);
  const int first_row = blockIdx.x * ROWS;
  const int lane = threadIdx.x & 31;
  const int group = query_heads / kv_heads;
  // The per-row walk may deal a KV head's query heads to several blocks (grid y = kv_heads · subgroups, blockDim
  // 32 · group / subgroups): each warp's walk is its head's whichever block it sits in. The grouped walk's block is
  // the whole group.
  int kv_head = blockIdx.y;
  int head = kv_head * group + (threadIdx.x >> 5);
  if constexpr (ROWS == 1) {
    const int warps = blockDim.x >> 5;
    const int subgroups = group / warps;
    kv_head = blockIdx.y / subgroups;
    head = blockIdx.y * warps + (threadIdx.x >> 5);
  }
  int last[ROWS];
  unsigned pending = 0;
#pragma unroll
  for (int r = 0; r < ROWS; r++) {
    const int row = first_row + r;
    last[r] = -1;
    if (row >= rows) continue;
    int slot, position;
    if (read_row(row_table, row, slots, capacity, slot, position)) {
      last[r] = last_key<VARIANT>(position);
      pending |= 1u << r;
    } else if (fold) {
      const long long head_row = (long long)row * query_heads + head;
      for (int e = 0; e < E; e++) out[head_row * D + lane * E + e] = to_bf16(NAN);
    }
  }
  while (pending != 0) {
    // The group: the pending rows of the first pending row's slot (the row table is read again, not kept).
    const int leader = __ffs(pending) - 1;
    int group_slot, leader_position;
    read_row(row_table, first_row + leader, slots, capacity, group_slot, leader_position);
    const int shift = (leader_position - (first_row + leader)) & (ATTENTION_TILE_KEYS - 1);
    const int first_last = last_key<VARIANT>(leader_position);
    unsigned members = 0;
    int group_last = -1;
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
      int slot, position;
      if (((pending >> r) & 1u) && read_row(row_table, first_row + r, slots, capacity, slot, position) &&
          slot == group_slot) {
        members |= 1u << r;
        group_last = max(group_last, last[r]);
      }
    }
    pending &= ~members;
    float query[ROWS][E];
    SoftmaxState<E> part[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
      if ((members >> r) & 1u) {
        load_bf16_run<E>(q + ((long long)(first_row + r) * query_heads + head) * D + lane * E, query[r]);
      } else {
#pragma unroll
        for (int e = 0; e < E; e++) query[r][e] = 0.0f;
      }
      empty_state(part[r]);
      if (fold) store_state(fold_state, r, part[r]);
    }
    const int splits = split_count(VARIANT == ATTENTION_GROUP_FIRST_ROW_SPLITS ? first_last : group_last);
    const int stride = fold ? 1 : gridDim.z;
    int split = fold ? 0 : blockIdx.z;
    const long long slot_row = (long long)group_slot * capacity;
    if (split < splits) {
      int begin = split * ATTENTION_SPLIT_KEYS;
      int end = min(begin + ATTENTION_SPLIT_KEYS, group_last + 1);
      int start = begin;
      int next = tile_end<VARIANT>(start, begin, shift);
      __syncthreads();  // the tiles are free (an earlier group of this block may still be reading them)
      stage_tile<D>(key_tile, keys, slot_row + start, kv_heads, kv_head, min(next, end) - start);
      for (;;) {
        const int count = min(next, end) - start;
        int row_count[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; r++) {
          const int row_end = min(begin + ATTENTION_SPLIT_KEYS, last[r] + 1);
          row_count[r] = ((members >> r) & 1u) ? max(0, min(next, row_end) - start) : 0;
          if (start == begin && row_count[r] > 0) empty_state(part[r]);
        }
        stage_tile<D>(value_tile, values, slot_row + start, kv_heads, kv_head, count);
        attention_wait_all_but_one();
        __syncthreads();
        float low[ROWS], high[ROWS];
        tile_scores<E, ROWS, VARIANT>(part, low, high, query, key_tile, row_count, count, scale);
        __syncthreads();
        const NextTile following = stage_next_tile<D, VARIANT>(key_tile, keys, slot_row, kv_heads, kv_head, split, begin,
                                                               end, next, stride, splits, group_last, shift);
        __syncthreads();
        tile_values<E, ROWS>(part, low, high, value_tile, row_count, count);
        __syncthreads();
        if (following.split != split || !following.more) {
          // The split ends: each row that has keys in it folds or writes its state.
#pragma unroll
          for (int r = 0; r < ROWS; r++) {
            if (!((members >> r) & 1u) || split >= split_count(last[r])) continue;
            if (fold) {
              SoftmaxState<E> state;
              load_state(state, fold_state, r);
              combine_state(state, part[r]);
              store_state(fold_state, r, state);
            } else {
              const long long entry = ((long long)(first_row + r) * query_heads + head) * max_splits + split;
              float* acc = workspace + entry * D + lane * E;
#pragma unroll
              for (int e = 0; e < E; e++) acc[e] = part[r].acc[e];
              if (lane == 0) {
                float* stats = workspace + (long long)rows * query_heads * max_splits * D + 2 * entry;
                stats[0] = part[r].maximum;
                stats[1] = part[r].sum;
              }
            }
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
    if (fold) {
#pragma unroll
      for (int r = 0; r < ROWS; r++) {
        if (!((members >> r) & 1u)) continue;
        const int row = first_row + r;
        SoftmaxState<E> state;
        load_state(state, fold_state, r);
        const bf16* gate_row =
            gate == nullptr ? nullptr : gate + row * gate_row_stride + head * gate_head_stride + lane * E;
        write_output<E>(out + ((long long)row * query_heads + head) * D + lane * E, gate_row, state);
      }
    }
  }
}

// Dynamic shared memory: the K and V tiles, then (fold = 1) the fold states of ROWS rows. Grid (ceil(rows / ROWS),
// kv_heads, 1) for fold = 1; for fold = 0, (rows / ROWS, kv_heads · subgroups, Z) with block z walking splits z,
// z + Z, ... of its rows and writing each as a partial for attention_combine. Block 32·group / subgroups (subgroups
// a divisor of the group: 1 for fold = 1).
template <int D, int ROWS, int VARIANT>
__device__ __forceinline__ void attention_rows(bf16* out, float* workspace, const bf16* q, const bf16* gate,
                                               long long gate_row_stride, long long gate_head_stride,
                                               const bf16* keys, const bf16* values, const int* row_table, int rows,
                                               int query_heads, int kv_heads, int slots, int capacity,
                                               int max_splits, float scale, int fold) {
  extern __shared__ __align__(16) unsigned char attention_shared[];
  attend_rows<D, ROWS, VARIANT>(out, workspace, q, gate, gate_row_stride, gate_head_stride, keys, values, row_table,
                                rows, query_heads, kv_heads, slots, capacity, max_splits, scale, fold,
                                attention_shared);
}

// One of the two walks as a call of its own, so that a control holding both allocates registers for each apart.
template <int D, int ROWS, int VARIANT>
__device__ __noinline__ void attention_rows_apart(bf16* out, float* workspace, const bf16* q, const bf16* gate,
                                                  long long gate_row_stride, long long gate_head_stride,
                                                  const bf16* keys, const bf16* values, const int* row_table,
                                                  int rows, int query_heads, int kv_heads, int slots, int capacity,
                                                  int max_splits, float scale, int fold) {
  attention_rows<D, ROWS, VARIANT>(out, workspace, q, gate, gate_row_stride, gate_head_stride, keys, values,
                                   row_table, rows, query_heads, kv_heads, slots, capacity, max_splits, scale, fold);
}

// A control's body, standing in for either real kernel: the grouped walk for fold = 1, the per-row walk for fold = 0.
template <int D, int VARIANT>
__device__ __forceinline__ void attention_rows_either(bf16* out, float* workspace, const bf16* q, const bf16* gate,
                                                      long long gate_row_stride, long long gate_head_stride,
                                                      const bf16* keys, const bf16* values, const int* row_table,
                                                      int rows, int query_heads, int kv_heads, int slots,
                                                      int capacity, int max_splits, float scale, int fold) {
  if (fold) {
    attention_rows_apart<D, ATTENTION_ROWS_PER_BLOCK, VARIANT>(out, workspace, q, gate, gate_row_stride,
                                                               gate_head_stride, keys, values, row_table, rows,
                                                               query_heads, kv_heads, slots, capacity, max_splits,
                                                               scale, fold);
  } else {
    attention_rows_apart<D, 1, VARIANT>(out, workspace, q, gate, gate_row_stride, gate_head_stride, keys, values,
                                        row_table, rows, query_heads, kv_heads, slots, capacity, max_splits, scale,
                                        fold);
  }
}

// Partials attention_combine reads before folding any of them.
#define COMBINE_BATCH 8

// The partial of split entry (a (row, head, split) index) as a walk wrote it: the lane's E dims, the maximum, the sum.
template <int D>
__device__ __forceinline__ void load_partial(SoftmaxState<D / 32>& part, const float* workspace, const float* stats,
                                             long long entry, int lane) {
  constexpr int E = D / 32;
  part.maximum = stats[2 * entry];
  part.sum = stats[2 * entry + 1];
#pragma unroll
  for (int e = 0; e < E; e++) part.acc[e] = workspace[entry * D + lane * E + e];
}

// Grid (rows, kv_heads), block 32·group: folds a row's split partials in split order and writes its output.
template <int D, int VARIANT>
__device__ __forceinline__ void attention_combine(bf16* out, const float* workspace, const bf16* gate,
                                                  long long gate_row_stride, long long gate_head_stride,
                                                  const int* row_table, int rows, int query_heads, int kv_heads,
                                                  int slots, int capacity, int max_splits) {
  constexpr int E = D / 32;
  const int row = blockIdx.x;
  const int lane = threadIdx.x & 31;
  const int head = blockIdx.y * (query_heads / kv_heads) + (threadIdx.x >> 5);
  if (row >= rows) return;
  int slot, position;
  const bool valid = read_row(row_table, row, slots, capacity, slot, position);
  const long long head_row = (long long)row * query_heads + head;
  if (!valid) {
    for (int e = 0; e < E; e++) out[head_row * D + lane * E + e] = to_bf16(NAN);
    return;
  }
  const int splits = split_count(last_key<VARIANT>(position));
  const float* stats = workspace + (long long)rows * query_heads * max_splits * D;
  SoftmaxState<E> state;
  empty_state(state);
  // The fold is a chain in split order; its loads are not: a batch of partials is read at once, then folded one by
  // one, so a long row waits on memory once a batch rather than once a split.
  for (int first = 0; first < splits; first += COMBINE_BATCH) {
    SoftmaxState<E> parts[COMBINE_BATCH];
#pragma unroll
    for (int i = 0; i < COMBINE_BATCH; i++) {
      if (first + i < splits) load_partial<D>(parts[i], workspace, stats, head_row * max_splits + first + i, lane);
    }
#pragma unroll
    for (int i = 0; i < COMBINE_BATCH; i++) {
      if (first + i < splits) combine_state(state, parts[i]);
    }
  }
  const bf16* gate_row = gate == nullptr ? nullptr : gate + row * gate_row_stride + head * gate_head_stride + lane * E;
  write_output<E>(out + head_row * D + lane * E, gate_row, state);
}
