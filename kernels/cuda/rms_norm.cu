// RMSNorm over the last axis: fp32 arithmetic from bf16 inputs, one rounding to bf16 at the output.
//   x, out: [rows, cols] bf16, cols contiguous (out may alias x); weight: [cols] bf16, or fp32 in the _f32_weight
//   entries (a converter may leave norm weights in F32; they are read as stored, never rounded)
//   r = rsqrt(mean(x²) + eps)
//   zero-centred (Qwen3.5 layers):  out = x · r · (1 + w)
//   plain:                          out = x · r · w
//   gated (GDN output norm):        out = x · r · w · silu(z),   z: [rows, cols] bf16
//   residual add first (add_rms_norm entries, zero-centred): x = bf16(x + s) written back, then out = norm(x) from
//   the rounded x, so the bits are add_bf16 then rms_norm_bf16 in one launch (out must not alias x)
// One block per row; the sum of squares is reduced in a fixed order, so a row's result is bit-repeatable.
#include "common.cuh"

__device__ __forceinline__ float element_at(const bf16* row, int column) { return to_float(row[column]); }
__device__ __forceinline__ float element_at(const float* row, int column) { return row[column]; }

// Columns a thread holds at once: the launchers give a row ceil(cols / 4) threads, so one pass covers it. Each thread
// still visits columns t, t + B, t + 2B, ... in that order (the sum of squares' order); loading a pass's columns
// before storing any keeps the loads in flight together (out may alias x, so stores between them would serialise).
#define NORM_COLUMNS_PER_THREAD 4

// A thread's columns of one pass, base + t + i·B, as floats (0 past the row's end), every load issued before any use.
template <typename Element>
__device__ __forceinline__ void load_pass(float (&values)[NORM_COLUMNS_PER_THREAD], const Element* row, int base,
                                          int cols) {
#pragma unroll
  for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) {
    const int column = base + threadIdx.x + i * blockDim.x;
    values[i] = column < cols ? element_at(row, column) : 0.0f;
  }
}

template <bool GATED, typename Weight>
__device__ __forceinline__ void rms_norm_row(bf16* out, const bf16* x, const bf16* gate, const Weight* weight,
                                             int cols, float eps, bool zero_centred) {
  __shared__ float scratch[32];
  const int stride = blockDim.x;
  const int pass = NORM_COLUMNS_PER_THREAD * stride;
  float squares = 0.0f;
  for (int base = 0; base < cols; base += pass) {
    float values[NORM_COLUMNS_PER_THREAD];
    load_pass(values, x, base, cols);
#pragma unroll
    for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) {
      if (base + threadIdx.x + i * stride < cols) squares += values[i] * values[i];
    }
  }
  const float scale = rsqrtf(block_sum(squares, scratch) / (float)cols + eps);
  for (int base = 0; base < cols; base += pass) {
    float values[NORM_COLUMNS_PER_THREAD];
    float weights[NORM_COLUMNS_PER_THREAD];
    float gates[NORM_COLUMNS_PER_THREAD] = {};
    load_pass(values, x, base, cols);
    load_pass(weights, weight, base, cols);
    if (GATED) load_pass(gates, gate, base, cols);
#pragma unroll
    for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) {
      const int column = base + threadIdx.x + i * stride;
      if (column >= cols) continue;
      const float w = weights[i];
      float value = values[i] * scale * (zero_centred ? 1.0f + w : w);
      if (GATED) value *= silu(gates[i]);
      out[column] = to_bf16(value);
    }
  }
}

// The residual add and the norm of its rounded sum: each thread uses only the sums it computed itself, kept in
// registers between the two passes when the row fits one pass (as the launchers size it), else read back.
template <typename Weight>
__device__ __forceinline__ void add_rms_norm_row(bf16* out, bf16* x, const bf16* source, const Weight* weight,
                                                 int cols, float eps) {
  __shared__ float scratch[32];
  const int stride = blockDim.x;
  const int pass = NORM_COLUMNS_PER_THREAD * stride;
  const bool one_pass = cols <= pass;
  float kept[NORM_COLUMNS_PER_THREAD] = {};
  float squares = 0.0f;
  for (int base = 0; base < cols; base += pass) {
    float values[NORM_COLUMNS_PER_THREAD];
    float sources[NORM_COLUMNS_PER_THREAD];
    load_pass(values, x, base, cols);
    load_pass(sources, source, base, cols);
#pragma unroll
    for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) {
      const int column = base + threadIdx.x + i * stride;
      if (column >= cols) continue;
      const bf16 sum = to_bf16(values[i] + sources[i]);
      x[column] = sum;
      const float value = to_float(sum);
      kept[i] = value;
      squares += value * value;
    }
  }
  const float scale = rsqrtf(block_sum(squares, scratch) / (float)cols + eps);
  for (int base = 0; base < cols; base += pass) {
    float values[NORM_COLUMNS_PER_THREAD];
    float weights[NORM_COLUMNS_PER_THREAD];
    if (one_pass) {
#pragma unroll
      for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) values[i] = kept[i];
    } else {
      load_pass(values, x, base, cols);
    }
    load_pass(weights, weight, base, cols);
#pragma unroll
    for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) {
      const int column = base + threadIdx.x + i * stride;
      if (column < cols) out[column] = to_bf16(values[i] * scale * (1.0f + weights[i]));
    }
  }
}

#define ADD_RMS_NORM_KERNEL(ENTRY, WEIGHT)                                                                          \
  extern "C" __global__ void ENTRY(bf16* out, bf16* x, const bf16* source, const WEIGHT* weight, int rows, int cols, \
                                   float eps) {                                                                     \
    KERNEL_PROLOGUE();                                                                                              \
    const long long row = blockIdx.x;                                                                               \
    if (row >= rows) return;                                                                                        \
    add_rms_norm_row(out + row * cols, x + row * cols, source + row * cols, weight, cols, eps);                     \
  }

#define RMS_NORM_KERNEL(ENTRY, WEIGHT)                                                                              \
  extern "C" __global__ void ENTRY(bf16* out, const bf16* x, const WEIGHT* weight, int rows, int cols, float eps,    \
                                   int zero_centred) {                                                              \
    KERNEL_PROLOGUE();                                                                                              \
    const long long row = blockIdx.x;                                                                               \
    if (row >= rows) return;                                                                                        \
    rms_norm_row<false>(out + row * cols, x + row * cols, nullptr, weight, cols, eps, zero_centred != 0);          \
  }

#define GATED_RMS_NORM_KERNEL(ENTRY, WEIGHT)                                                                        \
  extern "C" __global__ void ENTRY(bf16* out, const bf16* x, const bf16* gate, const WEIGHT* weight, int rows,       \
                                   int cols, float eps) {                                                           \
    KERNEL_PROLOGUE();                                                                                              \
    const long long row = blockIdx.x;                                                                               \
    if (row >= rows) return;                                                                                        \
    rms_norm_row<true>(out + row * cols, x + row * cols, gate + row * cols, weight, cols, eps, false);             \
  }

RMS_NORM_KERNEL(rms_norm_bf16, bf16)
RMS_NORM_KERNEL(rms_norm_f32_weight_bf16, float)
GATED_RMS_NORM_KERNEL(rms_norm_gated_bf16, bf16)
GATED_RMS_NORM_KERNEL(rms_norm_gated_f32_weight_bf16, float)
ADD_RMS_NORM_KERNEL(add_rms_norm_bf16, bf16)
ADD_RMS_NORM_KERNEL(add_rms_norm_f32_weight_bf16, float)
