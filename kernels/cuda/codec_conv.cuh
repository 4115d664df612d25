// Device code of the codec's convolution kernels (codec_conv.cu says what they compute). Each kernel is a template
// over its weight type (fp32, or fp16 as the release runs it) and a planted fault, so that the contract's controls
// (kernels/controls/codec_controls.cu) differ from the real kernels in exactly one place.
#pragma once
#include <cuda_fp16.h>
#include "common.cuh"

enum CodecFault {
  CODEC_FAULT_NONE = 0,
  CODEC_FAULT_TAPS_REVERSED = 1,
  CODEC_FAULT_HISTORY_OFF_BY_ONE = 2,
  CODEC_FAULT_CHUNKS_REVERSED_WITH_LANES = 3,
  CODEC_FAULT_TRANSPOSED_HISTORY_OFF_BY_ONE = 4,
  CODEC_FAULT_UPDATE_OFF_BY_ONE = 5,
  CODEC_FAULT_SNAKE_UNSQUARED = 6,
};

enum CodecActivation { CODEC_IDENTITY = 0, CODEC_TANH = 1, CODEC_GELU = 2 };

constexpr int CODEC_THREADS = 128;
constexpr int CODEC_ROWS = 8;
constexpr int CODEC_CHUNK = 32;
constexpr int CODEC_NARROW_THREADS = 128;
// Floats between the narrow conv's staged rows: one past the chunk, so that a warp's threads, each on its own row,
// read 32 distinct banks rather than one.
constexpr int CODEC_NARROW_STRIDE = CODEC_CHUNK + 1;

// Sequence table entries (LAYOUT.md): (slot, firstRow, rowCount, startPosition); rows are counted in the table's
// unit (frames) and scaled by the layer's rows per unit.
struct CodecSequence {
  int slot;
  long long first_row;
  int row_count;
};

__device__ __forceinline__ CodecSequence codec_sequence(const int* sequences, int index, int row_scale) {
  const int* entry = sequences + 4 * (long long)index;
  return {entry[0], (long long)entry[1] * row_scale, entry[2] * row_scale};
}

__device__ __forceinline__ float weight_value(float value) { return value; }
__device__ __forceinline__ float weight_value(__half value) { return __half2float(value); }

// 1/(α + 1e-9) of a channel, which a caller applying Snake to many values of one channel computes once.
__device__ __forceinline__ float snake_inverse(float alpha) { return __frcp_rn(__fadd_rn(alpha, 1e-9f)); }

// Snake x + sin²(αx)/(α + 1e-9), each step rounded explicitly so that every kernel that applies it (the convs, the
// history update, the standalone kernel) gets the same bits; `inverse` is snake_inverse(alpha).
template <int FAULT>
__device__ __forceinline__ float snake_with(float x, float alpha, float inverse) {
  const float sine = sinf(__fmul_rn(alpha, x));
  if (FAULT == CODEC_FAULT_SNAKE_UNSQUARED) return __fmaf_rn(inverse, sine, x);
  return __fmaf_rn(inverse, __fmul_rn(sine, sine), x);
}

template <int FAULT>
__device__ __forceinline__ float snake(float x, float alpha) {
  return snake_with<FAULT>(x, alpha, snake_inverse(alpha));
}

// Input row `row` of a sequence as the conv reads it: this call's x (through Snake when alpha is given) for row ≥ 0,
// the carried history (already through Snake) for row in [−history_rows, −1]; zero outside.
template <int FAULT>
__device__ __forceinline__ float conv_input(const float* x, long long x_stride, const float* alpha,
                                            const float* history, const CodecSequence& sequence, int history_rows,
                                            int inputs, long long row, int channel) {
  if (row >= sequence.row_count || row < -history_rows) return 0.0f;
  // Read-only loads (a conv never writes its inputs): the staging loops may issue several before using any.
  if (row >= 0) {
    const float value = __ldg(x + (sequence.first_row + row) * x_stride + channel);
    return alpha != nullptr ? snake<FAULT>(value, __ldg(alpha + channel)) : value;
  }
  const float* slab = history + (long long)sequence.slot * history_rows * inputs;
  return __ldg(slab + (history_rows + row) * inputs + channel);
}

// Exact GELU 0.5·v·erfc(−v/√2) (= 0.5·v·(1 + erf(v/√2)), without the cancellation of 1 + erf for v ≪ 0).
__device__ __forceinline__ float gelu(float value) {
  return __fmul_rn(__fmul_rn(0.5f, value), erfcf(__fmul_rn(-value, 0.70710678118654752f)));
}

// Output epilogue, as the cpu codec rounds: the conv (in fp32) + bias when there is one, then the residual with the
// scale in one fma (LayerScale / ConvNeXt γ: residual + scale·value; scale·value alone without a residual) or the
// residual added, then the activation.
__device__ __forceinline__ float conv_epilogue(float sum, const float* bias, const float* scale, const float* residual,
                                               long long residual_stride, long long row, int output, int activation) {
  float value = bias != nullptr ? __fadd_rn(sum, bias[output]) : sum;
  if (scale != nullptr) {
    value = residual != nullptr ? __fmaf_rn(scale[output], value, residual[row * residual_stride + output])
                                : __fmul_rn(scale[output], value);
  } else if (residual != nullptr) {
    value = __fadd_rn(residual[row * residual_stride + output], value);
  }
  if (activation == CODEC_TANH) value = tanhf(value);
  if (activation == CODEC_GELU) value = gelu(value);
  return value;
}

// The chunk of input channels summed at `step`: ascending (the faulted control reverses them in calls of several
// lanes, an accurate result in another order that only the invariance gate can see).
template <int FAULT>
__device__ __forceinline__ int chunk_at(int step, int chunks) {
  return FAULT == CODEC_FAULT_CHUNKS_REVERSED_WITH_LANES && gridDim.z > 1 ? chunks - 1 - step : step;
}

// Causal dilated conv. Block (output channels 128·x .., one 8-row tile, one sequence); thread = one output channel
// of 8 consecutive rows. Inputs are staged 32 channels at a time in shared memory: tile rows t0 − H .. t0 + 7.
// Every output sums its chunk of 32 input channels from zero (channel, then tap, ascending) and adds the chunks in
// order: the same order whatever tile, call, lane count or chunk the row is in.
template <typename Weight, int FAULT>
__device__ __forceinline__ void causal_conv(float* out, long long out_stride, const float* x, long long x_stride,
                                            const Weight* weight, const float* bias, const float* alpha,
                                            const float* residual, long long residual_stride, const float* scale,
                                            const float* history, const int* sequences, int row_scale, int inputs,
                                            int outputs, int kernel, int dilation, int activation) {
  extern __shared__ float tile[];
  const int output = blockIdx.x * CODEC_THREADS + threadIdx.x;
  const CodecSequence sequence = codec_sequence(sequences, blockIdx.z, row_scale);
  const int history_rows = (kernel - 1) * dilation;
  const int tile_rows = CODEC_ROWS + history_rows;
  const int reach = FAULT == CODEC_FAULT_HISTORY_OFF_BY_ONE ? 1 : 0;
  const int tiles = (sequence.row_count + CODEC_ROWS - 1) / CODEC_ROWS;
  for (int row_tile = blockIdx.y; row_tile < tiles; row_tile += gridDim.y) {
    const long long first = (long long)row_tile * CODEC_ROWS;
    float total[CODEC_ROWS];
    const int chunks = (inputs + CODEC_CHUNK - 1) / CODEC_CHUNK;
    for (int step = 0; step < chunks; step++) {
      const int base = chunk_at<FAULT>(step, chunks) * CODEC_CHUNK;
      const int width = min(CODEC_CHUNK, inputs - base);
      __syncthreads();
      for (int index = threadIdx.x; index < tile_rows * CODEC_CHUNK; index += CODEC_THREADS) {
        const int r = index / CODEC_CHUNK;
        const int c = index % CODEC_CHUNK;
        long long row = first - history_rows + r;
        if (row < 0) row -= reach;
        tile[index] = c < width ? conv_input<FAULT>(x, x_stride, alpha, history, sequence, history_rows, inputs, row,
                                                    base + c)
                                : 0.0f;
      }
      __syncthreads();
      float partial[CODEC_ROWS];
#pragma unroll
      for (int r = 0; r < CODEC_ROWS; r++) partial[r] = 0.0f;
      if (output < outputs) {
        for (int c = 0; c < width; c++) {
          const Weight* taps = weight + ((long long)(base + c) * kernel) * outputs + output;
          for (int tap = 0; tap < kernel; tap++) {
            // The control flips the kernel: tap k's input meets weight K − 1 − k (correlation for convolution).
            const int weight_tap = FAULT == CODEC_FAULT_TAPS_REVERSED ? kernel - 1 - tap : tap;
            const float w = weight_value(taps[(long long)weight_tap * outputs]);
            const float* column = tile + tap * dilation * CODEC_CHUNK + c;
#pragma unroll
            for (int r = 0; r < CODEC_ROWS; r++) partial[r] = __fmaf_rn(w, column[r * CODEC_CHUNK], partial[r]);
          }
        }
      }
#pragma unroll
      for (int r = 0; r < CODEC_ROWS; r++) total[r] = step == 0 ? partial[r] : __fadd_rn(total[r], partial[r]);
    }
    if (output >= outputs) continue;
#pragma unroll
    for (int r = 0; r < CODEC_ROWS; r++) {
      const long long row = first + r;
      if (row >= sequence.row_count) break;
      const long long at = sequence.first_row + row;
      out[at * out_stride + output] =
          conv_epilogue(total[r], bias, scale, residual, residual_stride, at, output, activation);
    }
  }
}

// Causal dilated conv for very few outputs (the decoder's last conv, 96 → 1). Block = R = ⌊128 / outputs⌋ rows of one
// sequence, thread = one (row, output); inputs staged 32 channels at a time as causal_conv stages them (rows
// t0 − H .. t0 + R − 1, through Snake once each). The chunked kernel's order exactly (chunk of 32 input channels
// from zero, channel then tap, chunks added ascending), so both give the same bits.
template <typename Weight, int FAULT>
__device__ __forceinline__ void narrow_conv(float* out, long long out_stride, const float* x, long long x_stride,
                                            const Weight* weight, const float* bias, const float* alpha,
                                            const float* residual, long long residual_stride, const float* scale,
                                            const float* history, const int* sequences, int row_scale, int inputs,
                                            int outputs, int kernel, int dilation, int activation) {
  extern __shared__ float tile[];
  const CodecSequence sequence = codec_sequence(sequences, blockIdx.z, row_scale);
  const int history_rows = (kernel - 1) * dilation;
  const int rows = CODEC_NARROW_THREADS / outputs;
  const int tile_rows = rows + history_rows;
  const int reach = FAULT == CODEC_FAULT_HISTORY_OFF_BY_ONE ? 1 : 0;
  const int chunks = (inputs + CODEC_CHUNK - 1) / CODEC_CHUNK;
  const int own_row = threadIdx.x / outputs;
  const int output = threadIdx.x % outputs;
  const int tiles = (sequence.row_count + rows - 1) / rows;
  for (int row_tile = blockIdx.x; row_tile < tiles; row_tile += gridDim.x) {
    const long long first = (long long)row_tile * rows;
    float total = 0.0f;
    for (int step = 0; step < chunks; step++) {
      const int base = chunk_at<FAULT>(step, chunks) * CODEC_CHUNK;
      const int width = min(CODEC_CHUNK, inputs - base);
      __syncthreads();
      for (int index = threadIdx.x; index < tile_rows * CODEC_CHUNK; index += CODEC_NARROW_THREADS) {
        const int r = index / CODEC_CHUNK;
        const int c = index % CODEC_CHUNK;
        long long row = first - history_rows + r;
        if (row < 0) row -= reach;
        tile[r * CODEC_NARROW_STRIDE + c] =
            c < width ? conv_input<FAULT>(x, x_stride, alpha, history, sequence, history_rows, inputs, row, base + c)
                      : 0.0f;
      }
      __syncthreads();
      float partial = 0.0f;
      if (own_row < rows) {
        for (int c = 0; c < width; c++) {
          const Weight* taps = weight + ((long long)(base + c) * kernel) * outputs + output;
          for (int tap = 0; tap < kernel; tap++) {
            const int weight_tap = FAULT == CODEC_FAULT_TAPS_REVERSED ? kernel - 1 - tap : tap;
            const float w = weight_value(taps[(long long)weight_tap * outputs]);
            partial = __fmaf_rn(w, tile[(own_row + tap * dilation) * CODEC_NARROW_STRIDE + c], partial);
          }
        }
      }
      total = step == 0 ? partial : __fadd_rn(total, partial);
    }
    const long long row = first + own_row;
    if (own_row >= rows || row >= sequence.row_count) continue;
    const long long at = sequence.first_row + row;
    out[at * out_stride + output] = conv_epilogue(total, bias, scale, residual, residual_stride, at, output, activation);
  }
}

// Causal transposed conv, kernel K = m·s: output row n·s + j = bias + Σ_i Σ_{q<m} w[i, j + q·s] · in[n − q, i]. Block
// and thread as causal_conv over output rows; the staged input rows are ⌊t0/s⌋ − (m − 1) .. ⌊(t0 + 7)/s⌋. The same
// chunked order: chunk of 32 input channels from zero (channel, then q, ascending), chunks added in order.
template <typename Weight, int FAULT>
__device__ __forceinline__ void causal_transposed_conv(float* out, long long out_stride, const float* x,
                                                       long long x_stride, const Weight* weight, const float* bias,
                                                       const float* alpha, const float* history,
                                                       const int* sequences, int row_scale, int inputs, int outputs,
                                                       int kernel, int stride) {
  extern __shared__ float tile[];
  const int output = blockIdx.x * CODEC_THREADS + threadIdx.x;
  // row_scale counts this layer's input rows per table unit; its output rows are `stride` times as many.
  const CodecSequence sequence = codec_sequence(sequences, blockIdx.z, row_scale);
  const int history_rows = (kernel + stride - 1) / stride - 1;
  const long long output_rows = (long long)sequence.row_count * stride;
  const int tiles = (int)((output_rows + CODEC_ROWS - 1) / CODEC_ROWS);
  for (int row_tile = blockIdx.y; row_tile < tiles; row_tile += gridDim.y) {
    const long long first = (long long)row_tile * CODEC_ROWS;
    const long long lowest = first / stride - history_rows;
    const int tile_rows = (int)((first + CODEC_ROWS - 1) / stride - lowest + 1);
    float total[CODEC_ROWS];
    const int chunks = (inputs + CODEC_CHUNK - 1) / CODEC_CHUNK;
    for (int step = 0; step < chunks; step++) {
      const int base = chunk_at<FAULT>(step, chunks) * CODEC_CHUNK;
      const int width = min(CODEC_CHUNK, inputs - base);
      __syncthreads();
      for (int index = threadIdx.x; index < tile_rows * CODEC_CHUNK; index += CODEC_THREADS) {
        const int r = index / CODEC_CHUNK;
        const int c = index % CODEC_CHUNK;
        long long row = lowest + r;
        if (FAULT == CODEC_FAULT_TRANSPOSED_HISTORY_OFF_BY_ONE && row < 0) row -= 1;
        tile[index] = c < width ? conv_input<FAULT>(x, x_stride, alpha, history, sequence, history_rows, inputs, row,
                                                    base + c)
                                : 0.0f;
      }
      __syncthreads();
      float partial[CODEC_ROWS];
#pragma unroll
      for (int r = 0; r < CODEC_ROWS; r++) partial[r] = 0.0f;
      if (output < outputs) {
        for (int c = 0; c < width; c++) {
          const Weight* taps = weight + ((long long)(base + c) * kernel) * outputs + output;
#pragma unroll
          for (int r = 0; r < CODEC_ROWS; r++) {
            // Output row first + r is phase j of input row n (staged at n − lowest): taps j, j + s, ... read n, n − 1.
            const int row = (int)first + r;
            const int source = row / stride - (int)lowest;
            const int phase = row % stride;
            for (int lag = 0; lag * stride + phase < kernel; lag++) {
              const float w = weight_value(taps[(phase + lag * stride) * outputs]);
              partial[r] = __fmaf_rn(w, tile[(source - lag) * CODEC_CHUNK + c], partial[r]);
            }
          }
        }
      }
#pragma unroll
      for (int r = 0; r < CODEC_ROWS; r++) total[r] = step == 0 ? partial[r] : __fadd_rn(total[r], partial[r]);
    }
    if (output >= outputs) continue;
#pragma unroll
    for (int r = 0; r < CODEC_ROWS; r++) {
      const long long row = first + r;
      if (row >= output_rows) break;
      const long long at = sequence.first_row * stride + row;
      out[at * out_stride + output] = __fadd_rn(total[r], bias[output]);
    }
  }
}

// The carried history after a call: the last H rows of history ++ snake(x), oldest first. One thread per (channel,
// sequence), rows in ascending order: row j reads row j + count of the old sequence, never one already replaced.
template <int FAULT>
__device__ __forceinline__ void history_update(float* history, const float* x, long long x_stride,
                                               const float* alpha, const int* sequences, int row_scale, int channels,
                                               int history_rows) {
  const int channel = blockIdx.x * blockDim.x + threadIdx.x;
  if (channel >= channels) return;
  const CodecSequence sequence = codec_sequence(sequences, blockIdx.z, row_scale);
  float* slab = history + (long long)sequence.slot * history_rows * channels + channel;
  const int shift = FAULT == CODEC_FAULT_UPDATE_OFF_BY_ONE ? 1 : 0;
  const float inverse = alpha != nullptr ? snake_inverse(alpha[channel]) : 0.0f;
  // Rows in batches whose loads are all issued before their stores: a row's source is never an earlier row (the
  // slab's later rows, or x), so no batch reads what it or a batch before it wrote, and the loads overlap.
  constexpr int BATCH = 8;
  for (int batch = 0; batch < history_rows; batch += BATCH) {
    float values[BATCH];
#pragma unroll
    for (int b = 0; b < BATCH; b++) {
      const long long source = (long long)sequence.row_count + batch + b - shift;
      if (batch + b >= history_rows) {
        values[b] = 0.0f;
      } else if (source < history_rows) {
        values[b] = source >= 0 ? slab[source * channels] : 0.0f;
      } else {
        const float input = x[(sequence.first_row + source - history_rows) * x_stride + channel];
        values[b] = alpha != nullptr ? snake_with<FAULT>(input, alpha[channel], inverse) : input;
      }
    }
#pragma unroll
    for (int b = 0; b < BATCH; b++) {
      if (batch + b < history_rows) slab[(long long)(batch + b) * channels] = values[b];
    }
  }
}

// Entry points, one macro per kernel signature: the real kernels and the controls share them.
#define CODEC_CONV_SIGNATURE(name, Weight)                                                                          \
  name(float* out, long long out_stride, const float* x, long long x_stride, const Weight* weight, const float* bias,  \
       const float* alpha, const float* residual, long long residual_stride, const float* scale,                      \
       const float* history, const int* sequences, int row_scale, int inputs, int outputs, int kernel, int dilation,  \
       int activation)

#define CODEC_CONV_ENTRY(name, Weight, FAULT)                                                                       \
  extern "C" __global__ void __launch_bounds__(CODEC_THREADS) CODEC_CONV_SIGNATURE(name, Weight) {                   \
    KERNEL_PROLOGUE();                                                                                              \
    causal_conv<Weight, FAULT>(out, out_stride, x, x_stride, weight, bias, alpha, residual, residual_stride, scale, \
                               history, sequences, row_scale, inputs, outputs, kernel, dilation, activation);       \
  }

#define CODEC_NARROW_ENTRY(name, Weight, FAULT)                                                                     \
  extern "C" __global__ void __launch_bounds__(CODEC_NARROW_THREADS) CODEC_CONV_SIGNATURE(name, Weight) {           \
    KERNEL_PROLOGUE();                                                                                              \
    narrow_conv<Weight, FAULT>(out, out_stride, x, x_stride, weight, bias, alpha, residual, residual_stride, scale, \
                               history, sequences, row_scale, inputs, outputs, kernel, dilation, activation);       \
  }

#define CODEC_TRANSPOSED_ENTRY(name, Weight, FAULT)                                                                 \
  extern "C" __global__ void __launch_bounds__(CODEC_THREADS)                                                        \
      name(float* out, long long out_stride, const float* x, long long x_stride, const Weight* weight,              \
           const float* bias, const float* alpha, const float* history, const int* sequences, int row_scale,        \
           int inputs, int outputs, int kernel, int stride) {                                                       \
    KERNEL_PROLOGUE();                                                                                              \
    causal_transposed_conv<Weight, FAULT>(out, out_stride, x, x_stride, weight, bias, alpha, history, sequences,    \
                                          row_scale, inputs, outputs, kernel, stride);                              \
  }

#define CODEC_HISTORY_ENTRY(name, FAULT)                                                                            \
  extern "C" __global__ void name(float* history, const float* x, long long x_stride, const float* alpha,           \
                                  const int* sequences, int row_scale, int channels, int history_rows) {            \
    KERNEL_PROLOGUE();                                                                                              \
    history_update<FAULT>(history, x, x_stride, alpha, sequences, row_scale, channels, history_rows);               \
  }

#define CODEC_SNAKE_ENTRY(name, FAULT)                                                                              \
  extern "C" __global__ void name(float* out, const float* x, const float* alpha, long long rows, int channels) {   \
    KERNEL_PROLOGUE();                                                                                              \
    const long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;                                       \
    if (index >= rows * channels) return;                                                                           \
    out[index] = snake<FAULT>(x[index], alpha[index % channels]);                                                   \
  }
