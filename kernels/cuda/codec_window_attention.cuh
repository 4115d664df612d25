// Device code of the codec's window attention (codec_transformer.cu says what it computes). One block per (head,
// group of ATTENTION_GROUP_ROWS consecutive rows of one sequence): the keys and values the group needs are staged
// once for all its rows, in fp64 so that each is converted once, and every output is still the cpu's attend
// (src/codec/transformer.ts) step by step: the dot over d ascending, · 1/sqrt(head_dim), the maximum, exp(s − max),
// the total over j ascending, p_j = e_j / total, and the sum over j ascending of p_j · v_j[d], one rounding to fp32.
// The body is a template over a planted fault, as the other transformer kernels are.
#pragma once
#include "codec_transformer.cuh"

constexpr int ATTENTION_THREADS = 256;
constexpr int ATTENTION_GROUP_ROWS = 16;
// Keys (then values) staged at once: thread slot s = 32 · (warp parity) + lane is key s in the dots, column s (and
// s + 64) in the weighted sum.
constexpr int ATTENTION_TILE_KEYS = 64;
// Rows a thread holds in the dots and the weighted sum: four warp pairs cover the group's 16 rows.
constexpr int ATTENTION_THREAD_ROWS = 4;
constexpr int ATTENTION_WARPS = ATTENTION_THREADS / 32;
// Keys of a tile each warp stages.
constexpr int ATTENTION_STAGE_KEYS = ATTENTION_TILE_KEYS / ATTENTION_WARPS;
// Threads per row while finding the maxima and normalising.
constexpr int ATTENTION_ROW_THREADS = ATTENTION_THREADS / ATTENTION_GROUP_ROWS;
static_assert(ATTENTION_THREADS == ATTENTION_TILE_KEYS * (ATTENTION_GROUP_ROWS / ATTENTION_THREAD_ROWS),
              "a warp pair of slots per quarter of the group's rows");

// The cpu's `if (s > maximum) maximum = s` from −∞: NaN never wins, and the maximum's order only picks the sign of a
// zero, which exp(s − maximum) does not see.
__device__ __forceinline__ double larger(double maximum, double value) { return value > maximum ? value : maximum; }

// Key or value `part` (1 keys, 2 values) of head `head` at absolute `position`: this call's rows from the sequence's
// start on, the slot's ring (position % window) before it.
__device__ __forceinline__ const float* attention_row(const float* qkv, const float* ring,
                                                      const TransformerSequence& sequence, long long position,
                                                      int part, int head, int head_dim, int width, int window) {
  if (position >= sequence.start) {
    return qkv + (sequence.first_row + position - sequence.start) * 3 * width + part * width + head * head_dim;
  }
  return ring + ((long long)sequence.slot * window + position % window) * width + head * head_dim;
}

// A block's rows: the first's position, the first key any of them attends, how many rows and keys (to the last row).
struct AttentionGroup {
  long long first_position;
  long long first_key;
  int rows;
  int keys;
  int reach;
};

__device__ __forceinline__ AttentionGroup attention_group(const TransformerSequence& sequence, long long first_row,
                                                          int reach) {
  const long long position = sequence.start + first_row;
  const long long first_key = position - reach + 1 > 0 ? position - reach + 1 : 0;
  const int rows = (int)min((long long)ATTENTION_GROUP_ROWS, sequence.row_count - first_row);
  return {position, first_key, rows, (int)(position + rows - first_key), reach};
}

// Row `row`'s keys as offsets from the group's first key, first to last inclusive; empty past the group's rows.
__device__ __forceinline__ int2 attention_window(const AttentionGroup& group, int row) {
  if (row >= group.rows) return make_int2(0, -1);
  const long long position = group.first_position + row;
  const long long first = position - group.reach + 1 > 0 ? position - group.reach + 1 : 0;
  return make_int2((int)(first - group.first_key), (int)(position - group.first_key));
}

// Keys or values first .. first + count − 1 of the head into the tile as fp64 (exact), rows padded by one double.
// Warp w stages keys w, w + 8, …, its lanes the columns; sixteen loads a thread are issued before their stores, so a
// thread waits on them once, not one at a time.
template <int COLUMNS>
__device__ __forceinline__ void attention_stage(double* tile, const float* qkv, const float* ring,
                                                const TransformerSequence& sequence, long long first, int count,
                                                int part, int head, int head_dim, int width, int window) {
  constexpr int BATCH = ATTENTION_STAGE_KEYS / COLUMNS;
  const int stride = head_dim + 1;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int batch = 0; batch < ATTENTION_STAGE_KEYS; batch += BATCH) {
    float loaded[BATCH][2 * COLUMNS];
#pragma unroll
    for (int k = 0; k < BATCH; k++) {
      const int key = warp + (batch + k) * ATTENTION_WARPS;
      if (key >= count) continue;
      const float* row = attention_row(qkv, ring, sequence, first + key, part, head, head_dim, width, window);
#pragma unroll
      for (int piece = 0; piece < 2 * COLUMNS; piece++) {
        const int d = lane + 32 * piece;
        if (d < head_dim) loaded[k][piece] = row[d];
      }
    }
#pragma unroll
    for (int k = 0; k < BATCH; k++) {
      const int key = warp + (batch + k) * ATTENTION_WARPS;
      if (key >= count) continue;
#pragma unroll
      for (int piece = 0; piece < 2 * COLUMNS; piece++) {
        const int d = lane + 32 * piece;
        if (d < head_dim) tile[key * stride + d] = loaded[k][piece];
      }
    }
  }
}

// Four rows' dots with one staged key, each over d ascending; the queries are [d][group row] so a pair is one load.
__device__ __forceinline__ void attention_dots(double* scores, const double* query, const double* key, int head_dim,
                                               double scale) {
  double dot[ATTENTION_THREAD_ROWS] = {0.0, 0.0, 0.0, 0.0};
#pragma unroll 4
  for (int d = 0; d < head_dim; d++) {
    const double k = key[d];
    const double2 low = *reinterpret_cast<const double2*>(query + d * ATTENTION_GROUP_ROWS);
    const double2 high = *reinterpret_cast<const double2*>(query + d * ATTENTION_GROUP_ROWS + 2);
    dot[0] = __dadd_rn(dot[0], __dmul_rn(low.x, k));
    dot[1] = __dadd_rn(dot[1], __dmul_rn(low.y, k));
    dot[2] = __dadd_rn(dot[2], __dmul_rn(high.x, k));
    dot[3] = __dadd_rn(dot[3], __dmul_rn(high.y, k));
  }
#pragma unroll
  for (int row = 0; row < ATTENTION_THREAD_ROWS; row++) scores[row] = __dmul_rn(dot[row], scale);
}

// The weighted sum's step at key j (offset in the group) for a thread's four rows and COLUMNS columns: p_j · v_j[d]
// added to each row whose window holds j (every row, unchecked, where the caller knows they all do).
template <int COLUMNS, bool CHECKED>
__device__ __forceinline__ void attention_accumulate(double (&sums)[ATTENTION_THREAD_ROWS][COLUMNS],
                                                     const double* probabilities, const double* value, int j,
                                                     const int2 (&windows)[ATTENTION_THREAD_ROWS],
                                                     const int (&columns)[COLUMNS]) {
  const double2 low = *reinterpret_cast<const double2*>(probabilities);
  const double2 high = *reinterpret_cast<const double2*>(probabilities + 2);
  const double p[ATTENTION_THREAD_ROWS] = {low.x, low.y, high.x, high.y};
#pragma unroll
  for (int m = 0; m < COLUMNS; m++) {
    const double v = value[columns[m]];
#pragma unroll
    for (int row = 0; row < ATTENTION_THREAD_ROWS; row++) {
      if (!CHECKED || (j >= windows[row].x && j <= windows[row].y)) {
        sums[row][m] = __dadd_rn(sums[row][m], __dmul_rn(p[row], v));
      }
    }
  }
}

// Keys from .. to (inclusive, offsets in the group) of the staged tile starting at key `base`, ascending.
template <int COLUMNS, bool CHECKED>
__device__ __forceinline__ void attention_walk(double (&sums)[ATTENTION_THREAD_ROWS][COLUMNS], const double* scores,
                                               const double* tile, int stride, int base, int from, int to,
                                               const int2 (&windows)[ATTENTION_THREAD_ROWS],
                                               const int (&columns)[COLUMNS]) {
#pragma unroll 4
  for (int j = from; j <= to; j++) {
    attention_accumulate<COLUMNS, CHECKED>(sums, scores + j * ATTENTION_GROUP_ROWS, tile + (j - base) * stride, j,
                                           windows, columns);
  }
}

// The weighted sums of a thread's four rows (from row `row0` of the group) and COLUMNS columns, the value tiles
// staged in position order; each row's chain runs over its own window, j ascending.
template <int FAULT, int COLUMNS>
__device__ __forceinline__ void attention_weighted_sum(float* out, const double* scores, double* tile,
                                                       const float* qkv, const float* values,
                                                       const TransformerSequence& sequence,
                                                       const AttentionGroup& group, long long group_row, int row0,
                                                       int slot, int head, int head_dim, int width, int window,
                                                       bool reversed) {
  const int stride = head_dim + 1;
  int2 windows[ATTENTION_THREAD_ROWS];
  int columns[COLUMNS];
  double sums[ATTENTION_THREAD_ROWS][COLUMNS];
  // The keys some of the four rows attend (union) and those all of them do (common).
  int union_first = 1 << 30, union_last = -1, common_first = 0, common_last = 1 << 30;
#pragma unroll
  for (int row = 0; row < ATTENTION_THREAD_ROWS; row++) {
    windows[row] = attention_window(group, row0 + row);
    if (windows[row].x <= windows[row].y) union_first = min(union_first, windows[row].x);
    union_last = max(union_last, windows[row].y);
    common_first = max(common_first, windows[row].x);
    common_last = min(common_last, windows[row].y);
#pragma unroll
    for (int m = 0; m < COLUMNS; m++) sums[row][m] = 0.0;
  }
#pragma unroll
  for (int m = 0; m < COLUMNS; m++) columns[m] = min(slot + m * ATTENTION_TILE_KEYS, head_dim - 1);
  const int tiles = (group.keys + ATTENTION_TILE_KEYS - 1) / ATTENTION_TILE_KEYS;
  for (int t = 0; t < tiles; t++) {
    const int base = (reversed ? tiles - 1 - t : t) * ATTENTION_TILE_KEYS;
    const int keys_here = min(ATTENTION_TILE_KEYS, group.keys - base);
    __syncthreads();
    attention_stage<COLUMNS>(tile, qkv, values, sequence, group.first_key + base, keys_here, 2, head, head_dim, width,
                             window);
    __syncthreads();
    const int from = max(base, union_first);
    const int to = min(base + keys_here - 1, union_last);
    if (reversed) {
      for (int j = to; j >= from; j--) {
        attention_accumulate<COLUMNS, true>(sums, scores + j * ATTENTION_GROUP_ROWS + row0, tile + (j - base) * stride,
                                            j, windows, columns);
      }
      continue;
    }
    const double* probabilities = scores + row0;
    const int common_from = max(from, common_first);
    const int common_to = min(to, common_last);
    if (common_from > common_to) {
      attention_walk<COLUMNS, true>(sums, probabilities, tile, stride, base, from, to, windows, columns);
    } else {
      attention_walk<COLUMNS, true>(sums, probabilities, tile, stride, base, from, common_from - 1, windows, columns);
      attention_walk<COLUMNS, false>(sums, probabilities, tile, stride, base, common_from, common_to, windows, columns);
      attention_walk<COLUMNS, true>(sums, probabilities, tile, stride, base, common_to + 1, to, windows, columns);
    }
  }
#pragma unroll
  for (int row = 0; row < ATTENTION_THREAD_ROWS; row++) {
    if (row0 + row >= group.rows) continue;
    float* target = out + (sequence.first_row + group_row + row0 + row) * width + head * head_dim;
#pragma unroll
    for (int m = 0; m < COLUMNS; m++) {
      const int column = slot + m * ATTENTION_TILE_KEYS;
      if (column < head_dim) target[column] = __double2float_rn(sums[row][m]);
    }
  }
}

// The softmax of the group's rows in place over the scores [key][16 rows]: each row's maximum (sixteen threads a
// row, then folded), exp(s − max), the total on one thread a row over j ascending, and p_j = e_j / total.
__device__ __forceinline__ void attention_softmax(double* scores, const AttentionGroup& group, bool reversed,
                                                  double* partial, double* row_maximum, double* row_total) {
  // Thread t walks keys t / 16, + 16, … of row t % 16.
  const int own_row = threadIdx.x % ATTENTION_GROUP_ROWS;
  const int own_step = threadIdx.x / ATTENTION_GROUP_ROWS;
  const int2 own = attention_window(group, own_row);
  double maximum = -INFINITY;
  for (int j = own.x + own_step; j <= own.y; j += ATTENTION_ROW_THREADS) {
    maximum = larger(maximum, scores[j * ATTENTION_GROUP_ROWS + own_row]);
  }
  partial[threadIdx.x] = maximum;
  __syncthreads();
  if (threadIdx.x < ATTENTION_GROUP_ROWS) {
    double row_max = partial[threadIdx.x];
    for (int step = 1; step < ATTENTION_ROW_THREADS; step++) {
      row_max = larger(row_max, partial[step * ATTENTION_GROUP_ROWS + threadIdx.x]);
    }
    row_maximum[threadIdx.x] = row_max;
  }
  __syncthreads();
  for (int j = own.x + own_step; j <= own.y; j += ATTENTION_ROW_THREADS) {
    double* score = scores + j * ATTENTION_GROUP_ROWS + own_row;
    *score = exp(__dsub_rn(*score, row_maximum[own_row]));
  }
  __syncthreads();
  // The one serial chain, sixteen at once.
  if (threadIdx.x < ATTENTION_GROUP_ROWS) {
    const int2 keys = attention_window(group, threadIdx.x);
    double total = 0.0;
    for (int step = 0; step <= keys.y - keys.x; step++) {
      const int j = reversed ? keys.y - step : keys.x + step;
      total = __dadd_rn(total, scores[j * ATTENTION_GROUP_ROWS + threadIdx.x]);
    }
    row_total[threadIdx.x] = total;
  }
  __syncthreads();
  for (int j = own.x + own_step; j <= own.y; j += ATTENTION_ROW_THREADS) {
    double* score = scores + j * ATTENTION_GROUP_ROWS + own_row;
    *score = __ddiv_rn(*score, row_total[own_row]);
  }
}

// The block's groups of rows for a head of at most COLUMNS · 64; `statics` holds the softmax's partial maxima
// [256], maxima [16] and totals [16].
template <int FAULT, int COLUMNS>
__device__ __forceinline__ void attention_groups(float* out, const float* qkv, const float* keys, const float* values,
                                                 const int* sequences, int row_scale, int heads, int head_dim,
                                                 int window, double* statics) {
  extern __shared__ double shared[];
  double* scores = shared;
  double* query = scores + (window + ATTENTION_GROUP_ROWS - 1) * ATTENTION_GROUP_ROWS;
  double* tile = query + head_dim * ATTENTION_GROUP_ROWS;
  const TransformerSequence sequence = transformer_sequence(sequences, blockIdx.z, row_scale);
  const int head = blockIdx.x;
  const int width = heads * head_dim;
  const int stride = head_dim + 1;
  const double scale = __ddiv_rn(1.0, __dsqrt_rn((double)head_dim));
  const int reach = FAULT == TRANSFORMER_FAULT_WINDOW_SHORT ? window - 1 : window;
  const bool reversed = FAULT == TRANSFORMER_FAULT_KEYS_REVERSED_WITH_LANES && gridDim.z > 1;
  const int warp = threadIdx.x >> 5;
  const int slot = (warp & 1) * 32 + (threadIdx.x & 31);
  const int row0 = (warp >> 1) * ATTENTION_THREAD_ROWS;
  for (long long group_row = (long long)blockIdx.y * ATTENTION_GROUP_ROWS; group_row < sequence.row_count;
       group_row += (long long)gridDim.y * ATTENTION_GROUP_ROWS) {
    const AttentionGroup group = attention_group(sequence, group_row, reach);
    __syncthreads();
    for (int index = threadIdx.x; index < ATTENTION_GROUP_ROWS * head_dim; index += ATTENTION_THREADS) {
      const int row = index / head_dim;
      const int d = index - row * head_dim;
      const float* q = qkv + (sequence.first_row + group_row + row) * 3 * width + head * head_dim;
      query[d * ATTENTION_GROUP_ROWS + row] = row < group.rows ? (double)q[d] : 0.0;
    }
    for (int base = 0; base < group.keys; base += ATTENTION_TILE_KEYS) {
      const int keys_here = min(ATTENTION_TILE_KEYS, group.keys - base);
      __syncthreads();
      attention_stage<COLUMNS>(tile, qkv, keys, sequence, group.first_key + base, keys_here, 1, head, head_dim, width,
                               window);
      __syncthreads();
      if (slot < keys_here && row0 < group.rows) {
        attention_dots(scores + (base + slot) * ATTENTION_GROUP_ROWS + row0, query + row0, tile + slot * stride,
                       head_dim, scale);
      }
    }
    __syncthreads();
    attention_softmax(scores, group, reversed, statics, statics + ATTENTION_THREADS,
                      statics + ATTENTION_THREADS + ATTENTION_GROUP_ROWS);
    attention_weighted_sum<FAULT, COLUMNS>(out, scores, tile, qkv, values, sequence, group, group_row, row0, slot,
                                           head, head_dim, width, window, reversed);
  }
}

// One block per (head, group of rows, sequence); row p attends positions max(0, p − window + 1) … p. Dynamic shared
// memory (codecTransformer.ts sizes it by the same rule): the scores [window + 15][16 rows], the queries
// [head_dim][16 rows] and one tile [64][head_dim + 1], all fp64.
template <int FAULT>
__device__ __forceinline__ void transformer_window_attention(float* out, const float* qkv, const float* keys,
                                                             const float* values, const int* sequences, int row_scale,
                                                             int heads, int head_dim, int window) {
  __shared__ double statics[ATTENTION_THREADS + 2 * ATTENTION_GROUP_ROWS];
  if (head_dim > ATTENTION_TILE_KEYS) {
    attention_groups<FAULT, 2>(out, qkv, keys, values, sequences, row_scale, heads, head_dim, window, statics);
  } else {
    attention_groups<FAULT, 1>(out, qkv, keys, values, sequences, row_scale, heads, head_dim, window, statics);
  }
}

#define CODEC_ATTENTION_ENTRY(name, FAULT)                                                                          \
  extern "C" __global__ void __launch_bounds__(ATTENTION_THREADS, 2)                                               \
      name(float* out, const float* qkv, const float* keys, const float* values, const int* sequences,              \
           int row_scale, int heads, int head_dim, int window) {                                                    \
    KERNEL_PROLOGUE();                                                                                              \
    transformer_window_attention<FAULT>(out, qkv, keys, values, sequences, row_scale, heads, head_dim, window);     \
  }
