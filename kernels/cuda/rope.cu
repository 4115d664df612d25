// Partial rotary position embedding (RoPE) on bf16 heads; out may alias x (each thread reads its pair first).
//   x, out: [rows, heads, head_dim] bf16 addressed by row_stride and head_stride (in elements), so the query half of
//           a fused [query | gate] projection can be rotated where it lies; positions: [rows] int32
//   only the first rotary_dims of each head rotate; the other dims are copied through
//   inv_freq_i = 1 / theta^(2i / rotary_dims) and angle = position · inv_freq_i, both rounded to fp32 as torch forms
//   them; cos/sin and the rotation in fp64; one rounding to bf16 at the output
//   neox (rotate-half, the backbone): pairs (i, i + rotary_dims/2); interleaved (GPT-J, the tower): pairs (2i, 2i+1)
// One block per (row, head).
#include "common.cuh"

extern "C" __global__ void rope_bf16(bf16* out, const bf16* x, const int* positions, int rows, int heads, int head_dim,
                                     int rotary_dims, float theta, int interleaved, long long row_stride,
                                     long long head_stride) {
  KERNEL_PROLOGUE();
  const int row = blockIdx.x / heads;
  const int head = blockIdx.x - row * heads;
  if (row >= rows) return;
  const long long base = row * row_stride + head * head_stride;
  const int half = rotary_dims / 2;
  const float position = (float)positions[row];
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const float exponent = (float)(2 * i) / (float)rotary_dims;
    const float inverse_frequency = 1.0f / (float)pow((double)theta, (double)exponent);
    const float angle = position * inverse_frequency;
    double sine, cosine;
    sincos((double)angle, &sine, &cosine);
    const long long first = base + (interleaved ? 2 * i : i);
    const long long second = base + (interleaved ? 2 * i + 1 : i + half);
    const double a = (double)to_float(x[first]);
    const double b = (double)to_float(x[second]);
    out[first] = __double2bfloat16(a * cosine - b * sine);
    out[second] = __double2bfloat16(b * cosine + a * sine);
  }
  if (out != x) {
    for (int dim = rotary_dims + threadIdx.x; dim < head_dim; dim += blockDim.x) out[base + dim] = x[base + dim];
  }
}
