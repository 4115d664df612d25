// Device code of the codec's row kernels (codec_rows.cu says what they compute). Each kernel is a template over a
// planted fault, so that the contract's controls (kernels/controls/codec_rows_controls.cu) differ from the real
// kernels in exactly one place.
#pragma once
#include "codec_conv.cuh"
#include "common.cuh"

enum CodecRowsFault {
  CODEC_ROWS_FAULT_NONE = 0,
  CODEC_ROWS_FAULT_DEPTHWISE_TAPS_REVERSED = 1,
  CODEC_ROWS_FAULT_DEPTHWISE_HISTORY_OFF_BY_ONE = 2,
  CODEC_ROWS_FAULT_LAYER_NORM_UNBIASED = 3,
  CODEC_ROWS_FAULT_QUANTIZER_SEMANTIC_FIRST = 4,
};

constexpr int CODEC_DEPTHWISE_THREADS = 128;
constexpr int CODEC_DEPTHWISE_ROWS = 8;
constexpr int CODEC_LAYER_NORM_THREADS = 256;
constexpr int CODEC_QUANTIZER_THREADS = 128;

// Input row `row` of a sequence's channel as the depthwise conv reads it: this call's x for row ≥ 0, the carried
// history for row in [−(K − 1), −1]; zero outside.
__device__ __forceinline__ float depthwise_input(const float* x, const float* history, const CodecSequence& sequence,
                                                 int history_rows, int channels, long long row, int channel) {
  if (row >= sequence.row_count || row < -history_rows) return 0.0f;
  if (row >= 0) return x[(sequence.first_row + row) * channels + channel];
  const float* slab = history + (long long)sequence.slot * history_rows * channels;
  return slab[(history_rows + row) * channels + channel];
}

// Causal depthwise conv. Block = 128 channels of one 8-row tile of one sequence; thread = one channel of 8 rows.
// Each output sums its taps from zero in ascending order (fp32 fmas), then adds the bias: CausalConv's order (bias,
// plus the tap sum formed first), with the tap sum rounded to fp32 where the cpu keeps it in fp64 and rounds once.
template <int FAULT>
__device__ __forceinline__ void depthwise_conv(float* out, const float* x, const float* weight, const float* bias,
                                               const float* history, const int* sequences, int row_scale,
                                               int channels, int kernel) {
  const int channel = blockIdx.x * CODEC_DEPTHWISE_THREADS + threadIdx.x;
  if (channel >= channels) return;
  const CodecSequence sequence = codec_sequence(sequences, blockIdx.z, row_scale);
  const int history_rows = kernel - 1;
  const int reach = FAULT == CODEC_ROWS_FAULT_DEPTHWISE_HISTORY_OFF_BY_ONE ? 1 : 0;
  const float* taps = weight + (long long)channel * kernel;
  const float offset = bias[channel];
  const int tiles = (sequence.row_count + CODEC_DEPTHWISE_ROWS - 1) / CODEC_DEPTHWISE_ROWS;
  for (int row_tile = blockIdx.y; row_tile < tiles; row_tile += gridDim.y) {
    for (int r = 0; r < CODEC_DEPTHWISE_ROWS; r++) {
      const long long row = (long long)row_tile * CODEC_DEPTHWISE_ROWS + r;
      if (row >= sequence.row_count) break;
      float sum = 0.0f;
      for (int tap = 0; tap < kernel; tap++) {
        // The control flips the kernel: tap k's input meets weight K − 1 − k.
        const int weight_tap = FAULT == CODEC_ROWS_FAULT_DEPTHWISE_TAPS_REVERSED ? kernel - 1 - tap : tap;
        long long source = row - history_rows + tap;
        if (source < 0) source -= reach;
        const float input = depthwise_input(x, history, sequence, history_rows, channels, source, channel);
        sum = __fmaf_rn(taps[weight_tap], input, sum);
      }
      out[(sequence.first_row + row) * channels + channel] = __fadd_rn(offset, sum);
    }
  }
}

// LayerNorm of one row per block, in fp32 where rows.ts sums in fp64 and rounds once. Values are taken relative to
// the row's first one, x₀ (exact for neighbours within a factor of two), so a mean far from zero costs no precision:
// shift = Σ(x − x₀)/width, centred = (x − x₀) − shift, variance = Σ centred²/width (biased), each thread's strided
// columns in order and then block_sum's fixed tree; scale = rsqrt(variance + eps) rounded to nearest; out =
// centred·scale·w + b with the last two steps in one fma.
template <int FAULT>
__device__ __forceinline__ void layer_norm_row(float* out, const float* x, const float* weight, const float* bias,
                                               int width, float eps) {
  __shared__ float scratch[32];
  const float origin = x[0];
  float sum = 0.0f;
  for (int column = threadIdx.x; column < width; column += CODEC_LAYER_NORM_THREADS)
    sum = __fadd_rn(sum, __fsub_rn(x[column], origin));
  const float shift = __fdiv_rn(block_sum(sum, scratch), (float)width);
  float squares = 0.0f;
  for (int column = threadIdx.x; column < width; column += CODEC_LAYER_NORM_THREADS) {
    const float centred = __fsub_rn(__fsub_rn(x[column], origin), shift);
    squares = __fmaf_rn(centred, centred, squares);
  }
  // The control divides by width − 1 (the unbiased estimate PyTorch's LayerNorm does not use).
  const float divisor = FAULT == CODEC_ROWS_FAULT_LAYER_NORM_UNBIASED ? (float)(width - 1) : (float)width;
  const float variance = __fdiv_rn(block_sum(squares, scratch), divisor);
  const float scale = __frsqrt_rn(__fadd_rn(variance, eps));
  for (int column = threadIdx.x; column < width; column += CODEC_LAYER_NORM_THREADS) {
    const float centred = __fsub_rn(__fsub_rn(x[column], origin), shift);
    out[column] = __fmaf_rn(__fmul_rn(centred, scale), weight[column], bias[column]);
  }
}

// One codebook's out_proj of its (clamped) code at latent channel `channel`: bias + Σ_d w[channel, d]·entry[d],
// from the bias in index order (fp32 fmas; Quantizer.project sums in fp64 and rounds once to fp32).
__device__ __forceinline__ float quantizer_project(const float* entries, int size, int code, const float* weights,
                                                   const float* biases, int latent, int dim, int codebook,
                                                   int channel) {
  const int clamped = min(max(code, 0), size - 1);
  const float* entry = entries + (long long)clamped * dim;
  const float* row = weights + ((long long)codebook * latent + channel) * dim;
  float sum = biases[(long long)codebook * latent + channel];
  for (int d = 0; d < dim; d++) sum = __fmaf_rn(row[d], entry[d], sum);
  return sum;
}

// Quantizer.decode of one frame at one latent channel: the residual codebooks summed in order (the first alone,
// each later one added, rounded to fp32 each time), then semantic + residual, as the cpu adds them.
template <int FAULT>
__device__ __forceinline__ void quantizer_decode(float* out, const int* codes, int frames, int latent, int dim,
                                                 int codebooks, int semantic_size, int residual_size,
                                                 const float* semantic_entries, const float* residual_entries,
                                                 const float* out_weights, const float* out_biases) {
  const int channel = blockIdx.x * CODEC_QUANTIZER_THREADS + threadIdx.x;
  if (channel >= latent) return;
  for (int frame = blockIdx.y; frame < frames; frame += gridDim.y) {
    const int* frame_codes = codes + (long long)frame * codebooks;
    const float semantic = quantizer_project(semantic_entries, semantic_size, frame_codes[0], out_weights, out_biases,
                                             latent, dim, 0, channel);
    // The control starts from the semantic projection and adds the residual ones to it, one by one.
    float residual = FAULT == CODEC_ROWS_FAULT_QUANTIZER_SEMANTIC_FIRST ? semantic : 0.0f;
    for (int codebook = 1; codebook < codebooks; codebook++) {
      const float* entries = residual_entries + (long long)(codebook - 1) * residual_size * dim;
      const float projected = quantizer_project(entries, residual_size, frame_codes[codebook], out_weights,
                                                out_biases, latent, dim, codebook, channel);
      const bool alone = codebook == 1 && FAULT != CODEC_ROWS_FAULT_QUANTIZER_SEMANTIC_FIRST;
      residual = alone ? projected : __fadd_rn(residual, projected);
    }
    out[(long long)frame * latent + channel] =
        FAULT == CODEC_ROWS_FAULT_QUANTIZER_SEMANTIC_FIRST ? residual : __fadd_rn(semantic, residual);
  }
}

// Entry points, one macro per kernel signature: the real kernels and the controls share them.
#define CODEC_DEPTHWISE_ENTRY(name, FAULT)                                                                          \
  extern "C" __global__ void __launch_bounds__(CODEC_DEPTHWISE_THREADS)                                             \
      name(float* out, const float* x, const float* weight, const float* bias, const float* history,                \
           const int* sequences, int row_scale, int channels, int kernel) {                                         \
    KERNEL_PROLOGUE();                                                                                              \
    depthwise_conv<FAULT>(out, x, weight, bias, history, sequences, row_scale, channels, kernel);                   \
  }

#define CODEC_LAYER_NORM_ENTRY(name, FAULT)                                                                         \
  extern "C" __global__ void __launch_bounds__(CODEC_LAYER_NORM_THREADS)                                            \
      name(float* out, const float* x, const float* weight, const float* bias, int width, float eps) {              \
    KERNEL_PROLOGUE();                                                                                              \
    const long long row = blockIdx.x;                                                                               \
    layer_norm_row<FAULT>(out + row * width, x + row * width, weight, bias, width, eps);                            \
  }

#define CODEC_QUANTIZER_ENTRY(name, FAULT)                                                                          \
  extern "C" __global__ void __launch_bounds__(CODEC_QUANTIZER_THREADS)                                             \
      name(float* out, const int* codes, int frames, int latent, int dim, int codebooks, int semantic_size,         \
           int residual_size, const float* semantic_entries, const float* residual_entries,                         \
           const float* out_weights, const float* out_biases) {                                                     \
    KERNEL_PROLOGUE();                                                                                              \
    quantizer_decode<FAULT>(out, codes, frames, latent, dim, codebooks, semantic_size, residual_size,               \
                            semantic_entries, residual_entries, out_weights, out_biases);                           \
  }
