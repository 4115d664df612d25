// Device code of the codec's windowed transformer kernels (codec_transformer.cu says what they compute). Each body is
// a template over a planted fault, so that the contract's controls (kernels/controls/codec_transformer_controls.cu)
// differ from the real kernels in exactly one place. Every step rounds through an explicit intrinsic (no contraction)
// so that the fp64 arithmetic is the cpu transformer's (src/codec/transformer.ts) operation for operation. The window
// attention is codec_window_attention.cuh.
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

#define CODEC_RING_ENTRY(name, FAULT)                                                                               \
  extern "C" __global__ void name(float* keys, float* values, const float* qkv, const int* sequences,               \
                                  int row_scale, int heads, int head_dim, int window) {                             \
    KERNEL_PROLOGUE();                                                                                              \
    transformer_ring_update<FAULT>(keys, values, qkv, sequences, row_scale, heads, head_dim, window);               \
  }
