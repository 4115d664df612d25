// The attention family's device code, shared by kernels/cuda/attention.cu and its planted controls (a variant
// argument selects the control's bug; the real kernels use the exact variants). attention.cu's header says what the
// kernels compute, their layouts, rounding points and reduction order.
#pragma once
#include "common.cuh"

#define ATTENTION_TILE_KEYS 64
#define ATTENTION_SPLIT_KEYS 256
#define ATTENTION_MAX_PREPARE_DIM 256

enum PrepareVariant { PREPARE_EXACT = 0, PREPARE_KEY_ROW_OFF_BY_ONE = 1 };
enum AttentionVariant { ATTENTION_EXACT = 0, ATTENTION_SHORT_BY_ONE = 1, ATTENTION_TILES_FROM_CALL = 2 };

// One row table entry; false when its slot or position lies outside the slabs.
__device__ __forceinline__ bool read_row(const int* row_table, int row, int slots, int capacity, int& slot,
                                         int& position) {
  slot = row_table[2 * row];
  position = row_table[2 * row + 1];
  return slot >= 0 && slot < slots && position >= 0 && position < capacity;
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
  const int heads = query_heads + kv_heads;
  const int row = blockIdx.x / heads;
  const int head = blockIdx.x - row * heads;
  if (row >= rows) return;
  int slot, position;
  const bool valid = read_row(row_table, row, slots, capacity, slot, position);
  const bool is_query = head < query_heads;
  const bf16* x;
  const bf16* weight;
  bf16* out;
  if (is_query) {
    const long long query_stride = (long long)head_dim * (gated ? 2 : 1);
    x = q_proj + ((long long)row * query_heads + head) * query_stride;
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
    const long long source = ((long long)row * kv_heads + kv_head) * head_dim;
    const long long value_target = (((long long)slot * capacity + position) * kv_heads + kv_head) * head_dim;
    for (int dim = threadIdx.x; dim < head_dim; dim += blockDim.x) values[value_target + dim] = v_proj[source + dim];
    x = k_proj + source;
    weight = k_norm;
    out = keys + (((long long)slot * capacity + key_row) * kv_heads + kv_head) * head_dim;
  }
  float squares = 0.0f;
  for (int column = threadIdx.x; column < head_dim; column += blockDim.x) {
    const float value = to_float(x[column]);
    squares += value * value;
  }
  const float scale = rsqrtf(block_sum(squares, scratch) / (float)head_dim + eps);
  for (int column = threadIdx.x; column < head_dim; column += blockDim.x) {
    const float w = to_float(weight[column]);
    normed[column] = to_float(to_bf16(to_float(x[column]) * scale * (1.0f + w)));
  }
  __syncthreads();
  const int half = rotary_dims / 2;
  const float rotary_position = (float)position;
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const float exponent = (float)(2 * i) / (float)rotary_dims;
    const float inverse_frequency = 1.0f / (float)pow((double)theta, (double)exponent);
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

// E consecutive bf16 (E = 2, 4 or 8; 4·E-byte aligned) widened to fp32, exactly.
template <int E>
__device__ __forceinline__ void load_bf16_run(const bf16* source, float* out) {
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

// Copies `count` consecutive slab rows (one KV head) into the tile; every thread of the block takes part, with up
// to eight 16-byte loads in flight before it stores them.
template <int D>
__device__ __forceinline__ void load_tile(bf16* tile, const bf16* slab, long long first_row, int kv_heads,
                                          int kv_head, int count) {
  constexpr int CHUNKS = D / 8;
  constexpr int BATCH = 8;
  const int total = count * CHUNKS;
  for (int base = threadIdx.x; base < total; base += BATCH * blockDim.x) {
    uint4 staged[BATCH];
#pragma unroll
    for (int i = 0; i < BATCH; i++) {
      const int chunk = base + i * blockDim.x;
      if (chunk < total) {
        const int key = chunk / CHUNKS;
        const int part = chunk - key * CHUNKS;
        staged[i] = *reinterpret_cast<const uint4*>(slab + ((first_row + key) * kv_heads + kv_head) * D + part * 8);
      }
    }
#pragma unroll
    for (int i = 0; i < BATCH; i++) {
      const int chunk = base + i * blockDim.x;
      if (chunk < total) *reinterpret_cast<uint4*>(tile + chunk * 8) = staged[i];
    }
  }
}

// One warp's query head over the keys [begin, end) of one split, in 64-key tiles from `begin` (a multiple of 64;
// the control variant cuts the first tile at the call's first position instead). Every warp of the block calls it
// with the same range (the tiles are shared).
template <int D, int VARIANT>
__device__ __forceinline__ void walk_split(SoftmaxState<D / 32>& state, bf16* tile, const float* query,
                                           const bf16* keys, const bf16* values, long long slot_row, int kv_heads,
                                           int kv_head, int begin, int end, float scale, int call_shift) {
  constexpr int E = D / 32;
  const int lane = threadIdx.x & 31;
  empty_state(state);
  for (int start = begin; start < end;) {
    int next = start + ATTENTION_TILE_KEYS;
    if (VARIANT == ATTENTION_TILES_FROM_CALL && start == begin && call_shift > 0) next = start + call_shift;
    const int count = min(next, end) - start;
    __syncthreads();
    load_tile<D>(tile, keys, slot_row + start, kv_heads, kv_head, count);
    __syncthreads();
    float low_score = -INFINITY, high_score = -INFINITY;
#pragma unroll
    for (int j = 0; j < ATTENTION_TILE_KEYS; j++) {
      if (j < count) {
        float key[E];
        load_bf16_run<E>(tile + j * D + lane * E, key);
        float partial = 0.0f;
#pragma unroll
        for (int e = 0; e < E; e++) partial = __fmaf_rn(query[e], key[e], partial);
        const float score = __fmul_rn(warp_sum(partial), scale);
        if (j == lane) low_score = score;
        if (j == lane + 32) high_score = score;
      }
    }
    const float maximum = fmaxf(state.maximum, warp_max(fmaxf(low_score, high_score)));
    const float low = lane < count ? expf(low_score - maximum) : 0.0f;
    const float high = lane + 32 < count ? expf(high_score - maximum) : 0.0f;
    const float rescale = expf(state.maximum - maximum);
    state.maximum = maximum;
    state.sum = __fadd_rn(__fmul_rn(state.sum, rescale), warp_sum(__fadd_rn(low, high)));
#pragma unroll
    for (int e = 0; e < E; e++) state.acc[e] = __fmul_rn(state.acc[e], rescale);
    __syncthreads();
    load_tile<D>(tile, values, slot_row + start, kv_heads, kv_head, count);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < ATTENTION_TILE_KEYS; j++) {
      if (j < count) {
        const float probability = __shfl_sync(0xffffffffu, j < 32 ? low : high, j & 31);
        float value[E];
        load_bf16_run<E>(tile + j * D + lane * E, value);
#pragma unroll
        for (int e = 0; e < E; e++) state.acc[e] = __fmaf_rn(probability, value[e], state.acc[e]);
      }
    }
    start = next;
  }
}

// Splits of a row: keys 0..last cut at multiples of ATTENTION_SPLIT_KEYS.
__device__ __forceinline__ int split_count(int last) {
  return last < 0 ? 0 : last / ATTENTION_SPLIT_KEYS + 1;
}

template <int VARIANT>
__device__ __forceinline__ int last_key(int position) {
  return VARIANT == ATTENTION_SHORT_BY_ONE ? position - 1 : position;
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

// Grid (rows, kv_heads, splits or 1), block 32·group: warp w is query head kv_head·group + w. fold = 1: one block
// walks every split of its row, combines them in order and writes the output; fold = 0: block z walks split z and
// writes its partial state for attention_combine.
template <int D, int VARIANT>
__device__ __forceinline__ void attention_rows(bf16* out, float* workspace, const bf16* q, const bf16* gate,
                                               long long gate_row_stride, long long gate_head_stride,
                                               const bf16* keys, const bf16* values, const int* row_table, int rows,
                                               int query_heads, int kv_heads, int slots, int capacity,
                                               int max_splits, float scale, int fold) {
  constexpr int E = D / 32;
  __shared__ __align__(16) bf16 tile[ATTENTION_TILE_KEYS * D];
  const int row = blockIdx.x;
  const int kv_head = blockIdx.y;
  const int lane = threadIdx.x & 31;
  const int head = kv_head * (query_heads / kv_heads) + (threadIdx.x >> 5);
  if (row >= rows) return;
  int slot, position;
  const bool valid = read_row(row_table, row, slots, capacity, slot, position);
  const long long head_row = (long long)row * query_heads + head;
  if (!valid) {
    if (fold) {
      for (int e = 0; e < E; e++) out[head_row * D + lane * E + e] = to_bf16(NAN);
    }
    return;
  }
  const int last = last_key<VARIANT>(position);
  const int splits = split_count(last);
  const int call_shift = (position - row) & (ATTENTION_TILE_KEYS - 1);
  const long long slot_row = (long long)slot * capacity;
  float query[E];
  load_bf16_run<E>(q + head_row * D + lane * E, query);
  SoftmaxState<E> part;
  if (fold) {
    SoftmaxState<E> state;
    empty_state(state);
    for (int split = 0; split < splits; split++) {
      const int begin = split * ATTENTION_SPLIT_KEYS;
      const int end = min(begin + ATTENTION_SPLIT_KEYS, last + 1);
      walk_split<D, VARIANT>(part, tile, query, keys, values, slot_row, kv_heads, kv_head, begin, end, scale,
                             call_shift);
      combine_state(state, part);
    }
    const bf16* gate_row = gate == nullptr ? nullptr : gate + row * gate_row_stride + head * gate_head_stride + lane * E;
    write_output<E>(out + head_row * D + lane * E, gate_row, state);
    return;
  }
  const int split = blockIdx.z;
  if (split >= splits) return;
  const int begin = split * ATTENTION_SPLIT_KEYS;
  const int end = min(begin + ATTENTION_SPLIT_KEYS, last + 1);
  walk_split<D, VARIANT>(part, tile, query, keys, values, slot_row, kv_heads, kv_head, begin, end, scale, call_shift);
  const long long entry = head_row * max_splits + split;
  float* acc = workspace + entry * D + lane * E;
#pragma unroll
  for (int e = 0; e < E; e++) acc[e] = part.acc[e];
  if (lane == 0) {
    float* stats = workspace + (long long)rows * query_heads * max_splits * D + 2 * entry;
    stats[0] = part.maximum;
    stats[1] = part.sum;
  }
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
  SoftmaxState<E> state, part;
  empty_state(state);
  for (int split = 0; split < splits; split++) {
    const long long entry = head_row * max_splits + split;
    part.maximum = stats[2 * entry];
    part.sum = stats[2 * entry + 1];
#pragma unroll
    for (int e = 0; e < E; e++) part.acc[e] = workspace[entry * D + lane * E + e];
    combine_state(state, part);
  }
  const bf16* gate_row = gate == nullptr ? nullptr : gate + row * gate_row_stride + head * gate_head_stride + lane * E;
  write_output<E>(out + head_row * D + lane * E, gate_row, state);
}
