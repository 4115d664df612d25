// SwiGLU activation: out = silu(gate) · up, fp32 arithmetic from bf16 inputs, one rounding to bf16.
//   swiglu_bf16: gate, up: [rows, cols] bf16 with row stride `in_stride` (so a fused [rows, 2·cols] gate|up projection
//                works: gate = base, up = base + cols, in_stride = 2·cols); out: [rows, cols] bf16, contiguous
//   swiglu_segments_combine: a segmented GEMM's combine (gemm_segments.cuh) whose segments 0 and 1 are gate and up,
//                both split K: h [M, N] from their fp32 partials, the other split segments combined as usual; the
//                bits of gemm_segments_combine then swiglu_bf16 (swiglu.cuh says why)
#include "swiglu.cuh"

extern "C" __global__ void swiglu_bf16(bf16* out, const bf16* gate, const bf16* up, int rows, int cols,
                                       long long in_stride) {
  KERNEL_PROLOGUE();
  const long long total = (long long)rows * cols;
  for (long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x; index < total;
       index += (long long)gridDim.x * blockDim.x) {
    const long long row = index / cols;
    const long long column = index - row * cols;
    const long long source = row * in_stride + column;
    out[index] = swiglu_value(to_float(gate[source]), to_float(up[source]));
  }
}

SWIGLU_SEGMENTS_COMBINE_KERNEL(swiglu_segments_combine_bf16, false)
