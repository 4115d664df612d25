// Device code of the codec's windowed transformer kernels (codec_transformer.cu says what they compute). Each body is
// a template over a planted fault, so that the contract's controls (kernels/controls/codec_transformer_controls.cu)
// differ from the real kernels in exactly one place. Every step rounds through an explicit intrinsic (no contraction)
// so that the fp64 arithmetic is the cpu transformer's (src/codec/transformer.ts) operation for operation.
#pragma once
#include "common.cuh"

enum CodecTransformerFault {
  TRANSFORMER_FAULT_NONE = 0,
  TRANSFORMER_FAULT_WINDOW_SHORT = 1,
  TRANSFORMER_FAULT_RING_SLOT_OFF = 2,
  TRANSFORMER_FAULT_ROPE_POSITION_BEHIND = 3,
  TRANSFORMER_FAULT_KEYS_REVERSED_WITH_LANES = 4,
};

constexpr int TRANSFORMER_NORM_THREADS = 256;
constexpr int TRANSFORMER_ATTENTION_THREADS = 128;

// A sequence of the call (codec_conv.cuh's table, with its start): rows and the start position scaled to this layer.
struct TransformerSequence {
  int slot;
  long long first_row;
  int row_count;
  long long start;
};

__device__ __forceinline__ TransformerSequence transformer_sequence(const int* sequences, int index, int row_scale) {
  const int* entry = sequences + 4 * (long long)index;
  return {entry[0], (long long)entry[1] * row_scale, entry[2] * row_scale, (long long)entry[3] * row_scale};
}

// Keys staged per attention tile, 33 KB of fp32 rows padded by one (conflict-free reads); codecTransformer.ts sizes
// the shared memory by the same rule.
__host__ __device__ __forceinline__ int attention_tile_keys(int head_dim) { return head_dim <= 64 ? 128 : 64; }

// Sum over the block in a fixed order: each warp's butterfly, then the warps' sums added in ascending order.
__device__ __forceinline__ double block_sum_double(double value, double* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value = __dadd_rn(value, __shfl_xor_sync(0xffffffffu, value, offset));
  __syncthreads();
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  double total = scratch[0];
  for (int other = 1; other < (int)(blockDim.x >> 5); other++) total = __dadd_rn(total, scratch[other]);
  return total;
}

// The cpu's `if (s > maximum) maximum = s` from −∞: NaN never wins, so the result does not depend on the order.
__device__ __forceinline__ double larger(double maximum, double value) { return value > maximum ? value : maximum; }

__device__ __forceinline__ double block_max_double(double value, double* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value = larger(value, __shfl_xor_sync(0xffffffffu, value, offset));
  __syncthreads();
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  double maximum = scratch[0];
  for (int other = 1; other < (int)(blockDim.x >> 5); other++) maximum = larger(maximum, scratch[other]);
  return maximum;
}

// RMSNorm of one row per block: squares summed in fp64 (each thread its columns ascending, then block_sum_double),
// r = 1 / sqrt(sum / width + eps), out = (x · r) · w in fp64, one rounding to fp32.
__device__ __forceinline__ void transformer_rms_norm(float* out, const float* x, const float* weight, int rows,
                                                     int width, double eps) {
  __shared__ double scratch[32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const float* in = x + row * width;
  double squares = 0.0;
  for (int column = threadIdx.x; column < width; column += blockDim.x) {
    const double value = in[column];
    squares = __dadd_rn(squares, __dmul_rn(value, value));
  }
  const double total = block_sum_double(squares, scratch);
  const double scale = __ddiv_rn(1.0, __dsqrt_rn(__dadd_rn(__ddiv_rn(total, (double)width), eps)));
  for (int column = threadIdx.x; column < width; column += blockDim.x) {
    const double value = __dmul_rn(__dmul_rn((double)in[column], scale), (double)weight[column]);
    out[row * width + column] = __double2float_rn(value);
  }
}

// Interleaved RoPE in place on q and k of qkv rows [T, 3·width]. Thread (pair, row) rotates that pair of every head
// of q and k: cos/sin from the table where it covers the position, else fround(cos/sin(position / frequency)).
template <int FAULT>
__device__ __forceinline__ void transformer_rope(float* qkv, const int* sequences, int row_scale, int heads,
                                                 int head_dim, const double* frequencies, const float* table,
                                                 int table_positions) {
  const TransformerSequence sequence = transformer_sequence(sequences, blockIdx.z, row_scale);
  const int pairs = head_dim / 2;
  const int pair = threadIdx.x;
  if (pair >= pairs) return;
  const int width = heads * head_dim;
  const int behind = FAULT == TRANSFORMER_FAULT_ROPE_POSITION_BEHIND ? 1 : 0;
  for (long long row = (long long)blockIdx.y * blockDim.y + threadIdx.y; row < sequence.row_count;
       row += (long long)gridDim.y * blockDim.y) {
    const long long position = sequence.start + row - behind;
    double cosine, sine;
    if (position >= 0 && position < table_positions) {
      cosine = table[(position * pairs + pair) * 2];
      sine = table[(position * pairs + pair) * 2 + 1];
    } else {
      const double angle = __ddiv_rn((double)position, frequencies[pair]);
      cosine = (double)__double2float_rn(cos(angle));
      sine = (double)__double2float_rn(sin(angle));
    }
    float* base = qkv + (sequence.first_row + row) * 3 * width + 2 * pair;
    for (int part = 0; part < 2; part++) {
      for (int head = 0; head < heads; head++) {
        float* at = base + part * width + head * head_dim;
        const double real = at[0];
        const double imaginary = at[1];
        at[0] = __double2float_rn(__dsub_rn(__dmul_rn(real, cosine), __dmul_rn(imaginary, sine)));
        at[1] = __double2float_rn(__dadd_rn(__dmul_rn(imaginary, cosine), __dmul_rn(real, sine)));
      }
    }
  }
}

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

// One block per (head, row, sequence); keys j = 0 .. count − 1 at positions first + j, first = max(0, p − window + 1).
// Thread j's dot over d ascending (fp64), scores · 1/sqrt(headDim), the maximum, exp(s − max), the total over j
// ascending, p_j = e_j / total, and thread d's sum over j ascending of p_j · v_j[d]: the cpu's attend, step by step,
// whichever of the keys come from the ring.
template <int FAULT>
__device__ __forceinline__ void transformer_window_attention(float* out, const float* qkv, const float* keys,
                                                             const float* values, const int* sequences, int row_scale,
                                                             int heads, int head_dim, int window) {
  extern __shared__ double shared[];
  __shared__ double scratch[32];
  __shared__ double total_shared;
  double* scores = shared;
  float* query = (float*)(scores + window);
  float* tile = query + head_dim;
  const TransformerSequence sequence = transformer_sequence(sequences, blockIdx.z, row_scale);
  const int head = blockIdx.x;
  const int width = heads * head_dim;
  const int tile_keys = attention_tile_keys(head_dim);
  const int stride = head_dim + 1;
  const double scale = __ddiv_rn(1.0, __dsqrt_rn((double)head_dim));
  const int reach = FAULT == TRANSFORMER_FAULT_WINDOW_SHORT ? window - 1 : window;
  const bool reversed = FAULT == TRANSFORMER_FAULT_KEYS_REVERSED_WITH_LANES && gridDim.z > 1;
  for (long long row = blockIdx.y; row < sequence.row_count; row += gridDim.y) {
    const long long position = sequence.start + row;
    const long long first = position - reach + 1 > 0 ? position - reach + 1 : 0;
    const int count = (int)(position - first + 1);
    const float* q = qkv + (sequence.first_row + row) * 3 * width + head * head_dim;
    __syncthreads();
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) query[d] = q[d];
    for (int base = 0; base < count; base += tile_keys) {
      const int keys_here = min(tile_keys, count - base);
      __syncthreads();
      for (int index = threadIdx.x; index < keys_here * head_dim; index += blockDim.x) {
        const int key = index / head_dim;
        const int d = index - key * head_dim;
        tile[key * stride + d] =
            attention_row(qkv, keys, sequence, first + base + key, 1, head, head_dim, width, window)[d];
      }
      __syncthreads();
      if (threadIdx.x < keys_here) {
        double dot = 0.0;
        for (int d = 0; d < head_dim; d++) {
          dot = __dadd_rn(dot, __dmul_rn((double)query[d], (double)tile[threadIdx.x * stride + d]));
        }
        scores[base + threadIdx.x] = __dmul_rn(dot, scale);
      }
    }
    __syncthreads();
    double maximum = -INFINITY;
    for (int j = threadIdx.x; j < count; j += blockDim.x) maximum = larger(maximum, scores[j]);
    maximum = block_max_double(maximum, scratch);
    for (int j = threadIdx.x; j < count; j += blockDim.x) scores[j] = exp(__dsub_rn(scores[j], maximum));
    __syncthreads();
    if (threadIdx.x == 0) {
      double total = 0.0;
      for (int step = 0; step < count; step++) total = __dadd_rn(total, scores[reversed ? count - 1 - step : step]);
      total_shared = total;
    }
    __syncthreads();
    const double total = total_shared;
    for (int j = threadIdx.x; j < count; j += blockDim.x) scores[j] = __ddiv_rn(scores[j], total);
    __syncthreads();
    // The values are staged a tile at a time by the whole block, so thread d's chain reads them from shared memory
    // (reading each from global memory inside the chain left it waiting on every load); the chain is unchanged.
    const int d = threadIdx.x;  // head_dim <= blockDim.x (the launcher's limit)
    const int tiles = (count + tile_keys - 1) / tile_keys;
    double sum = 0.0;
    for (int t = 0; t < tiles; t++) {
      const int base = (reversed ? tiles - 1 - t : t) * tile_keys;
      const int keys_here = min(tile_keys, count - base);
      __syncthreads();
      for (int index = threadIdx.x; index < keys_here * head_dim; index += blockDim.x) {
        const int key = index / head_dim;
        const int column = index - key * head_dim;
        tile[key * stride + column] =
            attention_row(qkv, values, sequence, first + base + key, 2, head, head_dim, width, window)[column];
      }
      __syncthreads();
      if (d < head_dim) {
        for (int step = 0; step < keys_here; step++) {
          const int j = reversed ? keys_here - 1 - step : step;
          sum = __dadd_rn(sum, __dmul_rn(scores[base + j], (double)tile[j * stride + d]));
        }
      }
    }
    if (d < head_dim) out[(sequence.first_row + row) * width + head * head_dim + d] = __double2float_rn(sum);
  }
}

// Each sequence's last min(rows, window) k and v rows of qkv into its slot's ring at position % window; the rows
// are distinct positions of one window, so no two threads write one ring row.
template <int FAULT>
__device__ __forceinline__ void transformer_ring_update(float* keys, float* values, const float* qkv,
                                                        const int* sequences, int row_scale, int heads, int head_dim,
                                                        int window) {
  const TransformerSequence sequence = transformer_sequence(sequences, blockIdx.z, row_scale);
  const int width = heads * head_dim;
  const int column = blockIdx.x * blockDim.x + threadIdx.x;
  if (column >= width) return;
  const int kept = min(sequence.row_count, window);
  const int shift = FAULT == TRANSFORMER_FAULT_RING_SLOT_OFF ? 1 : 0;
  for (int index = blockIdx.y; index < kept; index += gridDim.y) {
    const long long row = sequence.row_count - kept + index;
    const long long ring_row = (long long)sequence.slot * window + (sequence.start + row + shift) % window;
    const float* source = qkv + (sequence.first_row + row) * 3 * width + column;
    keys[ring_row * width + column] = source[width];
    values[ring_row * width + column] = source[2 * width];
  }
}

// out = fround(silu(gate)) · up: silu in fp64 (v / (1 + exp(−v))) rounded to fp32, the product rounded once.
__device__ __forceinline__ void transformer_swiglu(float* out, const float* gate_up, long long rows, int intermediate) {
  const long long total = rows * intermediate;
  for (long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x; index < total;
       index += (long long)gridDim.x * blockDim.x) {
    const long long row = index / intermediate;
    const long long column = index - row * intermediate;
    const float* source = gate_up + row * 2 * intermediate + column;
    const double gate = source[0];
    const float activated = __double2float_rn(__ddiv_rn(gate, __dadd_rn(1.0, exp(-gate))));
    out[index] = __fmul_rn(activated, source[intermediate]);
  }
}

// Entry points, one macro per kernel signature: the real kernels and the controls share them.
#define CODEC_ROPE_ENTRY(name, FAULT)                                                                               \
  extern "C" __global__ void name(float* qkv, const int* sequences, int row_scale, int heads, int head_dim,         \
                                  const double* frequencies, const float* table, int table_positions) {             \
    KERNEL_PROLOGUE();                                                                                              \
    transformer_rope<FAULT>(qkv, sequences, row_scale, heads, head_dim, frequencies, table, table_positions);       \
  }

#define CODEC_ATTENTION_ENTRY(name, FAULT)                                                                          \
  extern "C" __global__ void __launch_bounds__(TRANSFORMER_ATTENTION_THREADS)                                        \
      name(float* out, const float* qkv, const float* keys, const float* values, const int* sequences,              \
           int row_scale, int heads, int head_dim, int window) {                                                    \
    KERNEL_PROLOGUE();                                                                                              \
    transformer_window_attention<FAULT>(out, qkv, keys, values, sequences, row_scale, heads, head_dim, window);     \
  }

#define CODEC_RING_ENTRY(name, FAULT)                                                                               \
  extern "C" __global__ void name(float* keys, float* values, const float* qkv, const int* sequences,               \
                                  int row_scale, int heads, int head_dim, int window) {                             \
    KERNEL_PROLOGUE();                                                                                              \
    transformer_ring_update<FAULT>(keys, values, qkv, sequences, row_scale, heads, head_dim, window);               \
  }
