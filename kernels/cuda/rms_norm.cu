// RMSNorm over the last axis: fp32 arithmetic from bf16 inputs, one rounding to bf16 at the output.
//   x, out: [rows, cols] bf16, cols contiguous (out may alias x); weight: [cols] bf16, or fp32 in the _f32_weight
//   entries (a converter may leave norm weights in F32; they are read as stored, never rounded)
//   r = rsqrt(mean(x²) + eps)
//   zero-centred (Qwen3.5 layers):  out = x · r · (1 + w)
//   plain:                          out = x · r · w
//   gated (GDN output norm):        out = x · r · w · silu(z),   z: [rows, cols] bf16
//   residual add first (add_rms_norm entries, zero-centred): x = bf16(x + s) written back, then out = norm(x) from
//   the rounded x, so the bits are add_bf16 then rms_norm_bf16 in one launch (out must not alias x)
//   tower input (tower_input entries, zero-centred): out[t] = [norm(code row, enorm) | norm(input[t], hnorm)] with the
//   code row gathered as gather_codes_bf16 does (records.cu), each half normed as its own launch would norm it, so the
//   bits are gather_codes_bf16, rms_norm_bf16 twice and concat_columns_bf16 in one launch (one dependent stage, not 4)
// One block per row; the sum of squares is reduced in a fixed order, so a row's result is bit-repeatable. Every entry
// loads its norm weights before it waits for the previous grid (rms_norm.cuh, PassWeights): the same values.
#include "rms_norm.cuh"

#define ADD_RMS_NORM_KERNEL(ENTRY, WEIGHT)                                                                          \
  extern "C" __global__ void ENTRY(bf16* out, bf16* x, const bf16* source, const WEIGHT* weight, int rows, int cols, \
                                   float eps) {                                                                     \
    allow_dependent_launch();                                                                                       \
    const PassWeights early = early_pass_weights(weight, cols, cols, blockDim.x);                                   \
    wait_for_previous_grids();                                                                                      \
    const long long row = blockIdx.x;                                                                               \
    if (row >= rows) return;                                                                                        \
    add_rms_norm_row(out + row * cols, x + row * cols, source + row * cols, weight, cols, eps, early);              \
  }

#define RMS_NORM_KERNEL(ENTRY, WEIGHT)                                                                              \
  extern "C" __global__ void ENTRY(bf16* out, const bf16* x, const WEIGHT* weight, int rows, int cols, float eps,    \
                                   int zero_centred) {                                                              \
    allow_dependent_launch();                                                                                       \
    const PassWeights early = early_pass_weights(weight, cols, cols, blockDim.x);                                   \
    wait_for_previous_grids();                                                                                      \
    const long long row = blockIdx.x;                                                                               \
    if (row >= rows) return;                                                                                        \
    rms_norm_row<false>(out + row * cols, x + row * cols, nullptr, weight, cols, eps, zero_centred != 0,            \
                        blockDim.x, early);                                                                         \
  }

#define GATED_RMS_NORM_KERNEL(ENTRY, WEIGHT)                                                                        \
  extern "C" __global__ void ENTRY(bf16* out, const bf16* x, const bf16* gate, const WEIGHT* weight, int rows,       \
                                   int cols, float eps) {                                                           \
    allow_dependent_launch();                                                                                       \
    const PassWeights early = early_pass_weights(weight, cols, cols, blockDim.x);                                   \
    wait_for_previous_grids();                                                                                      \
    const long long row = blockIdx.x;                                                                               \
    if (row >= rows) return;                                                                                        \
    rms_norm_row<true>(out + row * cols, x + row * cols, gate + row * cols, weight, cols, eps, false, blockDim.x,   \
                       early);                                                                                      \
  }

RMS_NORM_KERNEL(rms_norm_bf16, bf16)
RMS_NORM_KERNEL(rms_norm_f32_weight_bf16, float)
GATED_RMS_NORM_KERNEL(rms_norm_gated_bf16, bf16)
GATED_RMS_NORM_KERNEL(rms_norm_gated_f32_weight_bf16, float)
ADD_RMS_NORM_KERNEL(add_rms_norm_bf16, bf16)
ADD_RMS_NORM_KERNEL(add_rms_norm_f32_weight_bf16, float)
TOWER_INPUT_KERNEL(tower_input_bf16, bf16, false)
TOWER_INPUT_KERNEL(tower_input_f32_weight_bf16, float, false)
