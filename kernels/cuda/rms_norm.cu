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

__device__ __forceinline__ float weight_at(const bf16* weight, int column) { return to_float(weight[column]); }
__device__ __forceinline__ float weight_at(const float* weight, int column) { return weight[column]; }

template <bool GATED, typename Weight>
__device__ __forceinline__ void rms_norm_row(bf16* out, const bf16* x, const bf16* gate, const Weight* weight,
                                             int cols, float eps, bool zero_centred) {
  __shared__ float scratch[32];
  float squares = 0.0f;
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    const float value = to_float(x[column]);
    squares += value * value;
  }
  const float scale = rsqrtf(block_sum(squares, scratch) / (float)cols + eps);
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    const float w = weight_at(weight, column);
    float value = to_float(x[column]) * scale * (zero_centred ? 1.0f + w : w);
    if (GATED) value *= silu(to_float(gate[column]));
    out[column] = to_bf16(value);
  }
}

// The residual add and the norm of its rounded sum: each thread reads back only the columns it wrote itself.
template <typename Weight>
__device__ __forceinline__ void add_rms_norm_row(bf16* out, bf16* x, const bf16* source, const Weight* weight,
                                                 int cols, float eps) {
  __shared__ float scratch[32];
  float squares = 0.0f;
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    const bf16 sum = to_bf16(to_float(x[column]) + to_float(source[column]));
    x[column] = sum;
    const float value = to_float(sum);
    squares += value * value;
  }
  const float scale = rsqrtf(block_sum(squares, scratch) / (float)cols + eps);
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    const float w = weight_at(weight, column);
    out[column] = to_bf16(to_float(x[column]) * scale * (1.0f + w));
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
