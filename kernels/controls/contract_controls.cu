// Deliberately wrong kernels for the kernel contract's controls (test/kernels/): each mimics a real kernel's
// signature with one planted bug that one of the contract's gates must catch. Never launched by the backend.
//   control_gather_off_by_one        embedding gather reading row id + 1            (accuracy gate)
//   control_swiglu_skips_last        SwiGLU that never writes the last element      (poisoned-output gate)
//   control_rms_norm_truncating      zero-centred RMSNorm rounding toward zero      (accuracy gate, tight bound)
//   control_router_ties_high         router top-k sending ties to the higher index  (exact-index gate)
//   control_swiglu_int_stride        SwiGLU declaring its int64 row stride as int   (argument-layout gate only)
//   control_add_rms_norm_no_store    residual add + norm that never stores the sum  (accuracy gate on the sum)
//   control_rms_norm_batched_path    RMSNorm rounding x·r to bf16 when rows > 1     (batch-invariance gate)
#include "common.cuh"

extern "C" __global__ void control_gather_off_by_one(bf16* out, const bf16* table, const int* ids, int rows, int cols,
                                                     int vocab) {
  KERNEL_PROLOGUE();
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const int id = min(ids[row] + 1, vocab - 1);
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    out[row * cols + column] = table[(long long)id * cols + column];
  }
}

extern "C" __global__ void control_swiglu_skips_last(bf16* out, const bf16* gate, const bf16* up, int rows, int cols,
                                                     long long in_stride) {
  KERNEL_PROLOGUE();
  const long long total = (long long)rows * cols;
  for (long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x; index < total - 1;
       index += (long long)gridDim.x * blockDim.x) {
    const long long row = index / cols;
    const long long source = row * in_stride + (index - row * cols);
    out[index] = to_bf16(silu(to_float(gate[source])) * to_float(up[source]));
  }
}

extern "C" __global__ void control_rms_norm_truncating(bf16* out, const bf16* x, const bf16* weight, int rows,
                                                       int cols, float eps, int zero_centred) {
  KERNEL_PROLOGUE();
  __shared__ float scratch[32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  float squares = 0.0f;
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    const float value = to_float(x[row * cols + column]);
    squares += value * value;
  }
  const float scale = rsqrtf(block_sum(squares, scratch) / (float)cols + eps);
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    const float w = to_float(weight[column]);
    const float value = to_float(x[row * cols + column]) * scale * (zero_centred ? 1.0f + w : w);
    out[row * cols + column] = __float2bfloat16_rz(value);
  }
}

// router_top_k's arguments; the grouping's go unused (the router case launches it without a grouping).
extern "C" __global__ void control_router_ties_high(int* expert_ids, float* expert_weights, int* pair_slots,
                                                    int* expert_offsets, int* tiles, int* tile_count, int* arrivals,
                                                    const bf16* logits, int rows, int experts, int top_k,
                                                    int tile_pairs, int max_tiles) {
  KERNEL_PROLOGUE();
  // One thread per row, sequential: softmax, then a scan that keeps the later expert on equal probability.
  const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const bf16* row_logits = logits + row * experts;
  float maximum = -INFINITY;
  for (int e = 0; e < experts; e++) maximum = fmaxf(maximum, to_float(row_logits[e]));
  float sum = 0.0f;
  for (int e = 0; e < experts; e++) sum += expf(to_float(row_logits[e]) - maximum);
  unsigned long long taken[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  float chosen_sum = 0.0f;
  for (int k = 0; k < top_k; k++) {
    int best = -1;
    float best_probability = 0.0f;
    for (int e = 0; e < experts && e < 512; e++) {
      if (taken[e >> 6] & (1ull << (e & 63))) continue;
      const float probability = expf(to_float(row_logits[e]) - maximum) / sum;
      if (best < 0 || probability >= best_probability) {
        best = e;
        best_probability = probability;
      }
    }
    taken[best >> 6] |= 1ull << (best & 63);
    expert_ids[row * top_k + k] = best;
    expert_weights[row * top_k + k] = best_probability;
    chosen_sum += best_probability;
  }
  for (int k = 0; k < top_k; k++) expert_weights[row * top_k + k] /= chosen_sum;
}

extern "C" __global__ void control_swiglu_int_stride(bf16* out, const bf16* gate, const bf16* up, int rows, int cols,
                                                     int in_stride) {
  KERNEL_PROLOGUE();
  // Right results (the driver copies the low half of the launcher's 8-byte value); the declared layout is wrong.
  const long long total = (long long)rows * cols;
  for (long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x; index < total;
       index += (long long)gridDim.x * blockDim.x) {
    const long long row = index / cols;
    const long long source = row * in_stride + (index - row * cols);
    out[index] = to_bf16(silu(to_float(gate[source])) * to_float(up[source]));
  }
}

extern "C" __global__ void control_rms_norm_batched_path(bf16* out, const bf16* x, const bf16* weight, int rows,
                                                         int cols, float eps, int zero_centred) {
  KERNEL_PROLOGUE();
  // A "batched" path taken only for calls of several rows, with an extra bf16 rounding inside.
  __shared__ float scratch[32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  float squares = 0.0f;
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    const float value = to_float(x[row * cols + column]);
    squares += value * value;
  }
  const float scale = rsqrtf(block_sum(squares, scratch) / (float)cols + eps);
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    const float w = to_float(weight[column]);
    float normalised = to_float(x[row * cols + column]) * scale;
    if (rows > 1) normalised = to_float(to_bf16(normalised));
    out[row * cols + column] = to_bf16(normalised * (zero_centred ? 1.0f + w : w));
  }
}

// The fused residual add and norm, forgetting to store the sum: the norm is right, the residual stream is not.
extern "C" __global__ void control_add_rms_norm_no_store(bf16* out, bf16* x, const bf16* source, const bf16* weight,
                                                         int rows, int cols, float eps) {
  KERNEL_PROLOGUE();
  __shared__ float scratch[32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  float squares = 0.0f;
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    const float value = to_float(to_bf16(to_float(x[row * cols + column]) + to_float(source[row * cols + column])));
    squares += value * value;
  }
  const float scale = rsqrtf(block_sum(squares, scratch) / (float)cols + eps);
  for (int column = threadIdx.x; column < cols; column += blockDim.x) {
    const float sum = to_float(to_bf16(to_float(x[row * cols + column]) + to_float(source[row * cols + column])));
    out[row * cols + column] = to_bf16(sum * scale * (1.0f + to_float(weight[column])));
  }
}
