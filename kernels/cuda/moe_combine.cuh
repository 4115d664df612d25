// The MoE combine's arithmetic (kernels/cuda/moe_route.cu says what it computes): the one definition used by
// moe_combine (a block per row) and by the down GEMM that combines after its last block (moe_down_combine.cuh).
#pragma once
#include "common.cuh"

#define MAX_TOP_K 16

// A row's ranks in ascending expert id (ties by rank) into `order`; false when an id is outside [0, experts).
__device__ __forceinline__ bool combine_row_order(int* order, const int* expert_ids, long long row, int top_k,
                                                  int experts) {
  int ids[MAX_TOP_K];
  bool valid = true;
#pragma unroll
  for (int k = 0; k < MAX_TOP_K; k++) ids[k] = k < top_k ? expert_ids[row * top_k + k] : 0;
#pragma unroll
  for (int k = 0; k < MAX_TOP_K; k++) {
    if (k < top_k) {
      int position = 0;
#pragma unroll
      for (int other = 0; other < MAX_TOP_K; other++) {
        if (other < top_k && (ids[other] < ids[k] || (ids[other] == ids[k] && other < k))) position++;
      }
      valid = valid && ids[k] >= 0 && ids[k] < experts;
      order[position] = k;
    }
  }
  return valid;
}

// out[row, column .. column + 7]: the row's ranks in `order` summed in fp64 with bf16 weights, plus sigmoid(gate) ·
// shared (one fma), rounded fp64 → fp32 → bf16; NaN when the row is not valid. The expert outputs are read through
// L2 (__ldcg): the fused down GEMM's other blocks wrote them during its grid.
__device__ __forceinline__ void combine_chunk(bf16* out, const bf16* y, const float* expert_weights, const bf16* shared,
                                              const bf16* shared_gate, const int* order, bool valid, long long row,
                                              int column, int top_k, int hidden) {
  const double gate = (double)to_float(shared_gate[row]);
  const double scale = 1.0 / (1.0 + exp(-gate));
  // Every rank's weight and chunk requested before the first is added, so the loads are in flight together.
  float weights[MAX_TOP_K];
  uint4 chunks[MAX_TOP_K];
#pragma unroll
  for (int j = 0; j < MAX_TOP_K; j++) {
    if (j < top_k) {
      const int k = order[j];
      weights[j] = expert_weights[row * top_k + k];
      chunks[j] = __ldcg(reinterpret_cast<const uint4*>(y + (row * top_k + k) * hidden + column));
    }
  }
  const uint4 shared_chunk = *reinterpret_cast<const uint4*>(shared + row * hidden + column);
  double sums[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
#pragma unroll
  for (int j = 0; j < MAX_TOP_K; j++) {
    if (j < top_k) {
      const double weight = (double)to_float(to_bf16(weights[j]));
      const bf16* values = reinterpret_cast<const bf16*>(&chunks[j]);
      // Products of two bf16 values are exact in fp64: fused or not, the same sum.
#pragma unroll
      for (int i = 0; i < 8; i++) sums[i] += weight * (double)to_float(values[i]);
    }
  }
  const bf16* shared_values = reinterpret_cast<const bf16*>(&shared_chunk);
  uint4 result;
  bf16* result_values = reinterpret_cast<bf16*>(&result);
#pragma unroll
  for (int i = 0; i < 8; i++) {
    const double total = valid ? fma(scale, (double)to_float(shared_values[i]), sums[i]) : (double)NAN;
    result_values[i] = to_bf16(__double2float_rn(total));
  }
  *reinterpret_cast<uint4*>(out + row * hidden + column) = result;
}
