// The codec's causal dilated conv, register-tiled: each thread holds 8 outputs × 8 rows, so one shared-memory read
// of a weight or an input feeds 8 multiply-adds instead of one. Every output keeps causal_conv's order exactly (a
// chunk of 32 input channels summed from zero, channel then tap, chunks added ascending; the tile only decides
// where the operands wait), so both kernels give the same bits and either may run any layer.
#pragma once
#include "codec_conv.cuh"

constexpr int TILED_OUTPUTS = 8;                                   // per thread
constexpr int TILED_ROWS = 8;                                      // per thread
constexpr int TILED_OUTPUT_GROUPS = 16;                            // threads across a block's outputs
constexpr int TILED_ROW_GROUPS = 8;                                // threads across a block's rows
constexpr int TILED_THREADS = TILED_OUTPUT_GROUPS * TILED_ROW_GROUPS;
constexpr int TILED_BLOCK_OUTPUTS = TILED_OUTPUTS * TILED_OUTPUT_GROUPS;  // 128
constexpr int TILED_BLOCK_ROWS = TILED_ROWS * TILED_ROW_GROUPS;           // 64
constexpr int TILED_STAGE = 8;                                     // input channels staged at a time
constexpr int TILED_MAXIMUM_KERNEL = 8;

// Shared floats: the staged weights [8 channels, K, 128 outputs] and inputs [8 channels, 64 + H rows].
__host__ __device__ constexpr int tiled_shared_floats(int kernel, int history_rows) {
  return TILED_STAGE * kernel * TILED_BLOCK_OUTPUTS + TILED_STAGE * (TILED_BLOCK_ROWS + history_rows);
}

template <typename Weight, int FAULT>
__device__ __forceinline__ void tiled_conv(float* out, long long out_stride, const float* x, long long x_stride,
                                           const Weight* weight, const float* bias, const float* alpha,
                                           const float* residual, long long residual_stride, const float* scale,
                                           const float* history, const int* sequences, int row_scale, int inputs,
                                           int outputs, int kernel, int dilation, int activation) {
  extern __shared__ float shared[];
  const int history_rows = (kernel - 1) * dilation;
  const int tile_rows = TILED_BLOCK_ROWS + history_rows;
  float* staged_weights = shared;                                    // [c][tap][128]
  float* staged_inputs = shared + TILED_STAGE * kernel * TILED_BLOCK_OUTPUTS;  // [c][tile_rows]
  const CodecSequence sequence = codec_sequence(sequences, blockIdx.z, row_scale);
  const int output_group = threadIdx.x % TILED_OUTPUT_GROUPS;
  const int row_group = threadIdx.x / TILED_OUTPUT_GROUPS;
  const int block_output = blockIdx.x * TILED_BLOCK_OUTPUTS;
  const int reach = FAULT == CODEC_FAULT_HISTORY_OFF_BY_ONE ? 1 : 0;
  const int chunks = (inputs + CODEC_CHUNK - 1) / CODEC_CHUNK;
  const int tiles = (sequence.row_count + TILED_BLOCK_ROWS - 1) / TILED_BLOCK_ROWS;
  for (int row_tile = blockIdx.y; row_tile < tiles; row_tile += gridDim.y) {
    const long long first = (long long)row_tile * TILED_BLOCK_ROWS;
    float total[TILED_ROWS][TILED_OUTPUTS];
    float partial[TILED_ROWS][TILED_OUTPUTS];
    for (int step = 0; step < chunks; step++) {
      const int base = chunk_at<FAULT>(step, chunks) * CODEC_CHUNK;
      const int width = min(CODEC_CHUNK, inputs - base);
#pragma unroll
      for (int r = 0; r < TILED_ROWS; r++)
#pragma unroll
        for (int o = 0; o < TILED_OUTPUTS; o++) partial[r][o] = 0.0f;
      for (int stage = 0; stage < width; stage += TILED_STAGE) {
        const int count = min(TILED_STAGE, width - stage);
        __syncthreads();
        for (int index = threadIdx.x; index < TILED_STAGE * kernel * TILED_BLOCK_OUTPUTS; index += TILED_THREADS) {
          const int o = index % TILED_BLOCK_OUTPUTS;
          const int tap = (index / TILED_BLOCK_OUTPUTS) % kernel;
          const int c = index / (TILED_BLOCK_OUTPUTS * kernel);
          const int output = block_output + o;
          float value = 0.0f;
          if (c < count && output < outputs) {
            const int weight_tap = FAULT == CODEC_FAULT_TAPS_REVERSED ? kernel - 1 - tap : tap;
            value = weight_value(weight[((long long)(base + stage + c) * kernel + weight_tap) * outputs + output]);
          }
          staged_weights[index] = value;
        }
        for (int index = threadIdx.x; index < TILED_STAGE * tile_rows; index += TILED_THREADS) {
          const int c = index % TILED_STAGE;
          const int r = index / TILED_STAGE;
          long long row = first - history_rows + r;
          if (row < 0) row -= reach;
          staged_inputs[c * tile_rows + r] =
              c < count ? conv_input<FAULT>(x, x_stride, alpha, history, sequence, history_rows, inputs, row,
                                            base + stage + c)
                        : 0.0f;
        }
        __syncthreads();
        for (int c = 0; c < count; c++) {
          for (int tap = 0; tap < kernel; tap++) {
            const float4* w4 = reinterpret_cast<const float4*>(
                staged_weights + (c * kernel + tap) * TILED_BLOCK_OUTPUTS + output_group * TILED_OUTPUTS);
            const float4 low = w4[0];
            const float4 high = w4[1];
            const float* column = staged_inputs + c * tile_rows + row_group * TILED_ROWS + tap * dilation;
#pragma unroll
            for (int r = 0; r < TILED_ROWS; r++) {
              const float input = column[r];
              partial[r][0] = __fmaf_rn(low.x, input, partial[r][0]);
              partial[r][1] = __fmaf_rn(low.y, input, partial[r][1]);
              partial[r][2] = __fmaf_rn(low.z, input, partial[r][2]);
              partial[r][3] = __fmaf_rn(low.w, input, partial[r][3]);
              partial[r][4] = __fmaf_rn(high.x, input, partial[r][4]);
              partial[r][5] = __fmaf_rn(high.y, input, partial[r][5]);
              partial[r][6] = __fmaf_rn(high.z, input, partial[r][6]);
              partial[r][7] = __fmaf_rn(high.w, input, partial[r][7]);
            }
          }
        }
      }
#pragma unroll
      for (int r = 0; r < TILED_ROWS; r++)
#pragma unroll
        for (int o = 0; o < TILED_OUTPUTS; o++)
          total[r][o] = step == 0 ? partial[r][o] : __fadd_rn(total[r][o], partial[r][o]);
    }
#pragma unroll
    for (int r = 0; r < TILED_ROWS; r++) {
      const long long row = first + row_group * TILED_ROWS + r;
      if (row >= sequence.row_count) break;
      const long long at = sequence.first_row + row;
#pragma unroll
      for (int o = 0; o < TILED_OUTPUTS; o++) {
        const int output = block_output + output_group * TILED_OUTPUTS + o;
        if (output < outputs) {
          out[at * out_stride + output] =
              conv_epilogue(total[r][o], bias, scale, residual, residual_stride, at, output, activation);
        }
      }
    }
  }
}

// Weights staged per step of the transposed conv: fewer channels for its longer kernels (K = 2·stride up to 16).
__host__ __device__ constexpr int tiled_transposed_stage(int kernel) { return kernel <= 8 ? 8 : 4; }

__host__ __device__ constexpr int tiled_transposed_shared_floats(int kernel, int stride) {
  return tiled_transposed_stage(kernel) * (kernel * TILED_BLOCK_OUTPUTS + TILED_BLOCK_ROWS / stride + kernel / stride - 1);
}

// Causal transposed conv (stride s dividing 8, K = m·s), register-tiled the same way: a thread holds 8 outputs × 8
// output rows of one phase j (input rows n .. n + 7, output rows (n + k)·s + j), so its rows share every weight.
// A block covers 64 output rows = 64/s input rows. causal_transposed_conv's order per output exactly (chunk of 32
// input channels from zero, channel then q ascending, chunks added ascending), so the same bits.
template <typename Weight, int FAULT>
__device__ __forceinline__ void tiled_transposed_conv(float* out, long long out_stride, const float* x,
                                                      long long x_stride, const Weight* weight, const float* bias,
                                                      const float* alpha, const float* history, const int* sequences,
                                                      int row_scale, int inputs, int outputs, int kernel, int stride) {
  extern __shared__ float shared[];
  const int taps = kernel / stride;  // m
  const int history_rows = taps - 1;
  const int block_inputs = TILED_BLOCK_ROWS / stride;
  const int tile_rows = block_inputs + history_rows;
  const int stage_channels = tiled_transposed_stage(kernel);
  float* staged_weights = shared;                                                 // [c][K][128]
  float* staged_inputs = shared + stage_channels * kernel * TILED_BLOCK_OUTPUTS;  // [c][tile_rows]
  const CodecSequence sequence = codec_sequence(sequences, blockIdx.z, row_scale);
  const int output_group = threadIdx.x % TILED_OUTPUT_GROUPS;
  const int row_group = threadIdx.x / TILED_OUTPUT_GROUPS;
  const int phase = row_group % stride;
  const int input_group = row_group / stride;
  const int block_output = blockIdx.x * TILED_BLOCK_OUTPUTS;
  const int chunks = (inputs + CODEC_CHUNK - 1) / CODEC_CHUNK;
  const int tiles = (sequence.row_count + block_inputs - 1) / block_inputs;
  for (int row_tile = blockIdx.y; row_tile < tiles; row_tile += gridDim.y) {
    const long long first = (long long)row_tile * block_inputs;  // input rows of the tile
    float total[TILED_ROWS][TILED_OUTPUTS];
    float partial[TILED_ROWS][TILED_OUTPUTS];
    for (int step = 0; step < chunks; step++) {
      const int base = chunk_at<FAULT>(step, chunks) * CODEC_CHUNK;
      const int width = min(CODEC_CHUNK, inputs - base);
#pragma unroll
      for (int r = 0; r < TILED_ROWS; r++)
#pragma unroll
        for (int o = 0; o < TILED_OUTPUTS; o++) partial[r][o] = 0.0f;
      for (int stage = 0; stage < width; stage += stage_channels) {
        const int count = min(stage_channels, width - stage);
        __syncthreads();
        for (int index = threadIdx.x; index < stage_channels * kernel * TILED_BLOCK_OUTPUTS; index += TILED_THREADS) {
          const int o = index % TILED_BLOCK_OUTPUTS;
          const int tap = (index / TILED_BLOCK_OUTPUTS) % kernel;
          const int c = index / (TILED_BLOCK_OUTPUTS * kernel);
          const int output = block_output + o;
          staged_weights[index] =
              c < count && output < outputs
                  ? weight_value(weight[((long long)(base + stage + c) * kernel + tap) * outputs + output])
                  : 0.0f;
        }
        for (int index = threadIdx.x; index < stage_channels * tile_rows; index += TILED_THREADS) {
          const int c = index % stage_channels;
          const int r = index / stage_channels;
          long long row = first - history_rows + r;
          if (FAULT == CODEC_FAULT_TRANSPOSED_HISTORY_OFF_BY_ONE && row < 0) row -= 1;
          staged_inputs[c * tile_rows + r] =
              c < count ? conv_input<FAULT>(x, x_stride, alpha, history, sequence, history_rows, inputs, row,
                                            base + stage + c)
                        : 0.0f;
        }
        __syncthreads();
        for (int c = 0; c < count; c++) {
          for (int lag = 0; lag < taps; lag++) {
            const float4* w4 = reinterpret_cast<const float4*>(
                staged_weights + (c * kernel + phase + lag * stride) * TILED_BLOCK_OUTPUTS +
                output_group * TILED_OUTPUTS);
            const float4 low = w4[0];
            const float4 high = w4[1];
            // Input row n − lag of output row n·s + phase, staged at n − lag − (first − history_rows).
            const float* column = staged_inputs + c * tile_rows + history_rows + input_group * TILED_ROWS - lag;
#pragma unroll
            for (int r = 0; r < TILED_ROWS; r++) {
              const float input = column[r];
              partial[r][0] = __fmaf_rn(low.x, input, partial[r][0]);
              partial[r][1] = __fmaf_rn(low.y, input, partial[r][1]);
              partial[r][2] = __fmaf_rn(low.z, input, partial[r][2]);
              partial[r][3] = __fmaf_rn(low.w, input, partial[r][3]);
              partial[r][4] = __fmaf_rn(high.x, input, partial[r][4]);
              partial[r][5] = __fmaf_rn(high.y, input, partial[r][5]);
              partial[r][6] = __fmaf_rn(high.z, input, partial[r][6]);
              partial[r][7] = __fmaf_rn(high.w, input, partial[r][7]);
            }
          }
        }
      }
#pragma unroll
      for (int r = 0; r < TILED_ROWS; r++)
#pragma unroll
        for (int o = 0; o < TILED_OUTPUTS; o++)
          total[r][o] = step == 0 ? partial[r][o] : __fadd_rn(total[r][o], partial[r][o]);
    }
#pragma unroll
    for (int r = 0; r < TILED_ROWS; r++) {
      const long long input_row = first + input_group * TILED_ROWS + r;
      if (input_row >= sequence.row_count) break;
      const long long at = (sequence.first_row + input_row) * stride + phase;
#pragma unroll
      for (int o = 0; o < TILED_OUTPUTS; o++) {
        const int output = block_output + output_group * TILED_OUTPUTS + o;
        if (output < outputs) out[at * out_stride + output] = __fadd_rn(total[r][o], bias[output]);
      }
    }
  }
}

#define CODEC_TILED_ENTRY(name, Weight, FAULT)                                                                      \
  extern "C" __global__ void __launch_bounds__(TILED_THREADS, 2) CODEC_CONV_SIGNATURE(name, Weight) {               \
    KERNEL_PROLOGUE();                                                                                              \
    tiled_conv<Weight, FAULT>(out, out_stride, x, x_stride, weight, bias, alpha, residual, residual_stride, scale,  \
                              history, sequences, row_scale, inputs, outputs, kernel, dilation, activation);        \
  }

#define CODEC_TILED_TRANSPOSED_ENTRY(name, Weight, FAULT)                                                           \
  extern "C" __global__ void __launch_bounds__(TILED_THREADS, 2)                                                     \
      name(float* out, long long out_stride, const float* x, long long x_stride, const Weight* weight,              \
           const float* bias, const float* alpha, const float* history, const int* sequences, int row_scale,        \
           int inputs, int outputs, int kernel, int stride) {                                                       \
    KERNEL_PROLOGUE();                                                                                              \
    tiled_transposed_conv<Weight, FAULT>(out, out_stride, x, x_stride, weight, bias, alpha, history, sequences,     \
                                         row_scale, inputs, outputs, kernel, stride);                               \
  }
