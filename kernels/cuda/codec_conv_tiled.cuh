// The codec's causal dilated conv and transposed conv, register-tiled: each thread holds 8 outputs × 8 rows, so one
// shared-memory read of a weight or an input feeds 8 multiply-adds instead of one. Weights are staged 8 (or 4)
// input channels at a time in their own type, by 16-byte cp.async into one of two buffers while the other is in use,
// so the copy of the next stage overlaps the sums of this one. Every output keeps the chunked kernels' order
// exactly (a chunk of 32 input channels summed from zero, channel then tap, chunks added ascending; the tile only
// decides where the operands wait), so tiled and chunked kernels give the same bits and either may run any layer.
#pragma once
#include "codec_conv.cuh"

constexpr int TILED_OUTPUTS = 8;                                   // per thread
constexpr int TILED_ROWS = 8;                                      // per thread
constexpr int TILED_OUTPUT_GROUPS = 16;                            // threads across a block's outputs
constexpr int TILED_ROW_GROUPS = 8;                                // threads across a block's rows
constexpr int TILED_THREADS = TILED_OUTPUT_GROUPS * TILED_ROW_GROUPS;
constexpr int TILED_BLOCK_OUTPUTS = TILED_OUTPUTS * TILED_OUTPUT_GROUPS;  // 128
constexpr int TILED_BLOCK_ROWS = TILED_ROWS * TILED_ROW_GROUPS;           // 64

// Input channels staged at a time: a whole chunk of 32 for k = 1 (the linears and pointwise convs, whose sums per
// channel are few), 8 up to K = 8, 4 for the transposed conv's longer kernels (K = 2·stride up to 16).
__host__ __device__ constexpr int tiled_stage_channels(int kernel) { return kernel == 1 ? 32 : kernel <= 8 ? 8 : 4; }

// Elements between staged input channels: the tile's rows, made odd so that the 8 channels a row's consecutive
// threads store fall in different banks.
__host__ __device__ constexpr int tiled_input_stride(int input_rows) { return input_rows | 1; }

__device__ __forceinline__ void tiled_copy_16(void* shared, const void* global, bool valid) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(address), "l"(global), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void tiled_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void tiled_wait_all_but_one() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
__device__ __forceinline__ void tiled_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

// 16-byte copies need every weight row of the block 16-byte aligned: Cout a multiple of 4 (fp32) or 8 (fp16).
template <typename Weight>
__device__ __forceinline__ bool tiled_copies_align(int outputs) {
  return outputs % (16 / (int)sizeof(Weight)) == 0;
}

// Stages the weights of input channels [first, first + count) into `target` [c][tap][128 outputs], in the weights'
// own type: by cp.async when the rows align (the caller commits and waits), else element by element.
template <typename Weight, int FAULT>
__device__ __forceinline__ void tiled_stage_weights(Weight* target, const Weight* weight, int first, int count,
                                                    int kernel, int outputs, int block_output, bool aligned) {
  constexpr int PER_COPY = 16 / sizeof(Weight);
  constexpr int COPIES_PER_ROW = TILED_BLOCK_OUTPUTS / PER_COPY;
  const int rows = count * kernel;
  if (aligned) {
    for (int index = threadIdx.x; index < rows * COPIES_PER_ROW; index += TILED_THREADS) {
      const int row = index / COPIES_PER_ROW;
      const int part = index % COPIES_PER_ROW;
      int source_row = first * kernel + row;
      if (FAULT == CODEC_FAULT_TAPS_REVERSED) source_row = first * kernel + row - 2 * (row % kernel) + kernel - 1;
      const int output = block_output + part * PER_COPY;
      const bool valid = output < outputs;
      const Weight* source = weight + (long long)source_row * outputs + (valid ? output : 0);
      tiled_copy_16(target + row * TILED_BLOCK_OUTPUTS + part * PER_COPY, source, valid);
    }
    return;
  }
  for (int index = threadIdx.x; index < rows * TILED_BLOCK_OUTPUTS; index += TILED_THREADS) {
    const int row = index / TILED_BLOCK_OUTPUTS;
    const int output = block_output + index % TILED_BLOCK_OUTPUTS;
    int source_row = first * kernel + row;
    if (FAULT == CODEC_FAULT_TAPS_REVERSED) source_row = first * kernel + row - 2 * (row % kernel) + kernel - 1;
    target[index] = output < outputs ? weight[(long long)source_row * outputs + output] : Weight(0.0f);
  }
}

// The 8 weights of one thread's outputs for one (channel, tap) row, widened to fp32 exactly.
__device__ __forceinline__ void tiled_weights(const float* row, float (&w)[TILED_OUTPUTS]) {
  const float4 low = reinterpret_cast<const float4*>(row)[0];
  const float4 high = reinterpret_cast<const float4*>(row)[1];
  w[0] = low.x, w[1] = low.y, w[2] = low.z, w[3] = low.w, w[4] = high.x, w[5] = high.y, w[6] = high.z, w[7] = high.w;
}
__device__ __forceinline__ void tiled_weights(const __half* row, float (&w)[TILED_OUTPUTS]) {
  const uint4 packed = *reinterpret_cast<const uint4*>(row);
  const __half2* pairs = reinterpret_cast<const __half2*>(&packed);
#pragma unroll
  for (int pair = 0; pair < 4; pair++) {
    const float2 values = __half22float2(pairs[pair]);
    w[2 * pair] = values.x;
    w[2 * pair + 1] = values.y;
  }
}

// partial[r][o] += w[o] · column[r] for the thread's 8 rows, in that order per output.
__device__ __forceinline__ void tiled_multiply_add(float (&partial)[TILED_ROWS][TILED_OUTPUTS],
                                                   const float (&w)[TILED_OUTPUTS], const float* column) {
#pragma unroll
  for (int r = 0; r < TILED_ROWS; r++) {
    const float input = column[r];
#pragma unroll
    for (int o = 0; o < TILED_OUTPUTS; o++) partial[r][o] = __fmaf_rn(w[o], input, partial[r][o]);
  }
}

// The (chunk step, first channel within the chunk) that follows a stage, or step = chunks when none does.
template <int FAULT>
__device__ __forceinline__ void tiled_next_stage(int& step, int& stage, int chunks, int inputs, int stage_channels) {
  const int width = min(CODEC_CHUNK, inputs - chunk_at<FAULT>(step, chunks) * CODEC_CHUNK);
  stage += stage_channels;
  if (stage >= width) {
    step += 1;
    stage = 0;
  }
}

// The loop both tiled kernels share: every (chunk, stage) of input channels in order, the next stage's weights
// copied while this one's are summed; `stage_inputs(first_channel, count)` fills the input tile and
// `multiply_add(partial, weights, count)` sums one stage. Returns nothing; leaves the chunk totals in `total`.
template <typename Weight, int FAULT, typename StageInputs, typename MultiplyAdd>
__device__ __forceinline__ void tiled_sum(float (&total)[TILED_ROWS][TILED_OUTPUTS], Weight* staged_weights,
                                          const Weight* weight, int inputs, int outputs, int kernel,
                                          int block_output, StageInputs stage_inputs, MultiplyAdd multiply_add) {
  const int stage_channels = tiled_stage_channels(kernel);
  const int stage_elements = stage_channels * kernel * TILED_BLOCK_OUTPUTS;
  const bool aligned = tiled_copies_align<Weight>(outputs);
  const int chunks = (inputs + CODEC_CHUNK - 1) / CODEC_CHUNK;
  float partial[TILED_ROWS][TILED_OUTPUTS];
  int buffer = 0;
  {
    const int first = chunk_at<FAULT>(0, chunks) * CODEC_CHUNK;
    const int count = min(stage_channels, min(CODEC_CHUNK, inputs - first));
    tiled_stage_weights<Weight, FAULT>(staged_weights, weight, first, count, kernel, outputs, block_output, aligned);
    tiled_commit();
  }
  for (int step = 0; step < chunks; step++) {
    const int base = chunk_at<FAULT>(step, chunks) * CODEC_CHUNK;
    const int width = min(CODEC_CHUNK, inputs - base);
#pragma unroll
    for (int r = 0; r < TILED_ROWS; r++)
#pragma unroll
      for (int o = 0; o < TILED_OUTPUTS; o++) partial[r][o] = 0.0f;
    for (int stage = 0; stage < width; stage += stage_channels) {
      const int count = min(stage_channels, width - stage);
      __syncthreads();  // every thread is done with the input tile and the other weight buffer
      stage_inputs(base + stage, count);
      int next_step = step;
      int next_stage = stage;
      tiled_next_stage<FAULT>(next_step, next_stage, chunks, inputs, stage_channels);
      if (next_step < chunks) {
        const int next_base = chunk_at<FAULT>(next_step, chunks) * CODEC_CHUNK;
        const int next_count = min(stage_channels, min(CODEC_CHUNK, inputs - next_base) - next_stage);
        tiled_stage_weights<Weight, FAULT>(staged_weights + (buffer ^ 1) * stage_elements, weight,
                                           next_base + next_stage, next_count, kernel, outputs, block_output,
                                           aligned);
        tiled_commit();
        tiled_wait_all_but_one();
      } else {
        tiled_wait_all();
      }
      __syncthreads();
      multiply_add(partial, staged_weights + buffer * stage_elements, count);
      buffer ^= 1;
    }
#pragma unroll
    for (int r = 0; r < TILED_ROWS; r++)
#pragma unroll
      for (int o = 0; o < TILED_OUTPUTS; o++)
        total[r][o] = step == 0 ? partial[r][o] : __fadd_rn(total[r][o], partial[r][o]);
  }
}

// Causal dilated conv (K ≤ 8): block = 128 outputs × 64 rows of one sequence; thread = 8 outputs × 8 rows.
template <typename Weight, int FAULT>
__device__ __forceinline__ void tiled_conv(float* out, long long out_stride, const float* x, long long x_stride,
                                           const Weight* weight, const float* bias, const float* alpha,
                                           const float* residual, long long residual_stride, const float* scale,
                                           const float* history, const int* sequences, int row_scale, int inputs,
                                           int outputs, int kernel, int dilation, int activation) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  const int history_rows = (kernel - 1) * dilation;
  const int tile_rows = TILED_BLOCK_ROWS + history_rows;
  const int tile_stride = tiled_input_stride(tile_rows);
  const int stage_channels = tiled_stage_channels(kernel);
  Weight* staged_weights = reinterpret_cast<Weight*>(shared_bytes);
  float* staged_inputs = reinterpret_cast<float*>(staged_weights + 2 * stage_channels * kernel * TILED_BLOCK_OUTPUTS);
  const CodecSequence sequence = codec_sequence(sequences, blockIdx.z, row_scale);
  const int output_group = threadIdx.x % TILED_OUTPUT_GROUPS;
  const int row_group = threadIdx.x / TILED_OUTPUT_GROUPS;
  const int block_output = blockIdx.x * TILED_BLOCK_OUTPUTS;
  const int reach = FAULT == CODEC_FAULT_HISTORY_OFF_BY_ONE ? 1 : 0;
  const int tiles = (sequence.row_count + TILED_BLOCK_ROWS - 1) / TILED_BLOCK_ROWS;
  for (int row_tile = blockIdx.y; row_tile < tiles; row_tile += gridDim.y) {
    const long long first = (long long)row_tile * TILED_BLOCK_ROWS;
    const auto stage_inputs = [&](int first_channel, int count) {
      for (int index = threadIdx.x; index < stage_channels * tile_rows; index += TILED_THREADS) {
        const int c = index % stage_channels;
        const int r = index / stage_channels;
        long long row = first - history_rows + r;
        if (row < 0) row -= reach;
        staged_inputs[c * tile_stride + r] =
            c < count ? conv_input<FAULT>(x, x_stride, alpha, history, sequence, history_rows, inputs, row,
                                          first_channel + c)
                      : 0.0f;
      }
    };
    const auto multiply_add = [&](float (&partial)[TILED_ROWS][TILED_OUTPUTS], const Weight* stage_weights,
                                  int count) {
      for (int c = 0; c < count; c++) {
        for (int tap = 0; tap < kernel; tap++) {
          float w[TILED_OUTPUTS];
          tiled_weights(stage_weights + (c * kernel + tap) * TILED_BLOCK_OUTPUTS + output_group * TILED_OUTPUTS, w);
          tiled_multiply_add(partial, w, staged_inputs + c * tile_stride + row_group * TILED_ROWS + tap * dilation);
        }
      }
    };
    float total[TILED_ROWS][TILED_OUTPUTS];
    tiled_sum<Weight, FAULT>(total, staged_weights, weight, inputs, outputs, kernel, block_output, stage_inputs,
                             multiply_add);
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
    __syncthreads();  // the next tile's first stage overwrites the buffers
  }
}

// Causal transposed conv (stride s dividing 8, K = m·s ≤ 16): a thread holds 8 outputs × 8 output rows of one phase
// j (input rows n .. n + 7, output rows (n + k)·s + j), so its rows share every weight; a block covers 64 output
// rows = 64/s input rows. The chunked transposed kernel's order per output (channel, then q ascending).
template <typename Weight, int FAULT>
__device__ __forceinline__ void tiled_transposed_conv(float* out, long long out_stride, const float* x,
                                                      long long x_stride, const Weight* weight, const float* bias,
                                                      const float* alpha, const float* history, const int* sequences,
                                                      int row_scale, int inputs, int outputs, int kernel, int stride) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  const int taps = kernel / stride;  // m
  const int history_rows = taps - 1;
  const int block_inputs = TILED_BLOCK_ROWS / stride;
  const int tile_rows = block_inputs + history_rows;
  const int tile_stride = tiled_input_stride(tile_rows);
  const int stage_channels = tiled_stage_channels(kernel);
  Weight* staged_weights = reinterpret_cast<Weight*>(shared_bytes);
  float* staged_inputs = reinterpret_cast<float*>(staged_weights + 2 * stage_channels * kernel * TILED_BLOCK_OUTPUTS);
  const CodecSequence sequence = codec_sequence(sequences, blockIdx.z, row_scale);
  const int output_group = threadIdx.x % TILED_OUTPUT_GROUPS;
  const int row_group = threadIdx.x / TILED_OUTPUT_GROUPS;
  const int phase = row_group % stride;
  const int input_group = row_group / stride;
  const int block_output = blockIdx.x * TILED_BLOCK_OUTPUTS;
  const int tiles = (sequence.row_count + block_inputs - 1) / block_inputs;
  for (int row_tile = blockIdx.y; row_tile < tiles; row_tile += gridDim.y) {
    const long long first = (long long)row_tile * block_inputs;  // input rows of the tile
    const auto stage_inputs = [&](int first_channel, int count) {
      for (int index = threadIdx.x; index < stage_channels * tile_rows; index += TILED_THREADS) {
        const int c = index % stage_channels;
        const int r = index / stage_channels;
        long long row = first - history_rows + r;
        if (FAULT == CODEC_FAULT_TRANSPOSED_HISTORY_OFF_BY_ONE && row < 0) row -= 1;
        staged_inputs[c * tile_stride + r] =
            c < count ? conv_input<FAULT>(x, x_stride, alpha, history, sequence, history_rows, inputs, row,
                                          first_channel + c)
                      : 0.0f;
      }
    };
    const auto multiply_add = [&](float (&partial)[TILED_ROWS][TILED_OUTPUTS], const Weight* stage_weights,
                                  int count) {
      for (int c = 0; c < count; c++) {
        for (int lag = 0; lag < taps; lag++) {
          float w[TILED_OUTPUTS];
          const int tap = phase + lag * stride;
          tiled_weights(stage_weights + (c * kernel + tap) * TILED_BLOCK_OUTPUTS + output_group * TILED_OUTPUTS, w);
          // Input row n − lag of output row n·s + phase, staged at n − lag − (first − history_rows).
          tiled_multiply_add(partial, w, staged_inputs + c * tile_stride + history_rows + input_group * TILED_ROWS - lag);
        }
      }
    };
    float total[TILED_ROWS][TILED_OUTPUTS];
    tiled_sum<Weight, FAULT>(total, staged_weights, weight, inputs, outputs, kernel, block_output, stage_inputs,
                             multiply_add);
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
    __syncthreads();  // the next tile's first stage overwrites the buffers
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
