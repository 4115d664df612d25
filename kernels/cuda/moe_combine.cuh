// The MoE combine's device functions, shared by moe_combine (moe_route.cu) and the combine fused with the residual add
// and norm after it (moe_combine_norm.cu), so both give each element the same bits:
//   out[r, c] = bf16(fp32( Σ_{ranks in ascending expert id, then rank} bf16(w_k) · y[r·top_k + k, c]
//                          + sigmoid(g_r) · shared[r, c] ))
// in fp64 (products of bf16 values are exact), NaN for a row with an expert id outside [0, experts).
#pragma once
#include "common.cuh"

#define MAX_TOP_K 16

// A row's ranks in ascending expert id (ties by rank) and whether every id is in range; one per block, in shared memory.
struct CombineOrder {
  int order[MAX_TOP_K];
  int valid;
};

// Thread 0 sorts the row's ranks into `shared_order`; the caller syncs the block before reading it.
__device__ __forceinline__ void combine_row_order(CombineOrder& shared_order, const int* expert_ids, long long row,
                                                  int top_k, int experts) {
  if (threadIdx.x != 0) return;
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
      shared_order.order[position] = k;
    }
  }
  shared_order.valid = valid;
}

// sigmoid of the row's shared-expert gate logit, in fp64.
__device__ __forceinline__ double combine_gate_scale(const bf16* shared_gate, long long row) {
  const double gate = (double)to_float(shared_gate[row]);
  return 1.0 / (1.0 + exp(-gate));
}

// A rank's routing weight as the sum uses it: rounded to bf16, then exact in fp64.
__device__ __forceinline__ double combine_weight(float weight) { return (double)to_float(to_bf16(weight)); }

// One rank's term added to an element's running sum: the product of two bf16 values is exact in fp64, so the sum has
// the same bits whether or not the compiler fuses the multiply-add.
__device__ __forceinline__ double combine_term(double sum, double weight, bf16 value) {
  return sum + weight * (double)to_float(value);
}

// The element's sum with the gated shared expert, rounded fp64 → fp32 → bf16 (NaN for a row with an id out of range).
// sigmoid(g) · shared is not exact: the fused multiply-add is written out, so no kernel's bits hang on contraction.
__device__ __forceinline__ bf16 combine_result(double sum, double scale, bf16 shared_value, bool valid) {
  const double total = valid ? __fma_rn(scale, (double)to_float(shared_value), sum) : (double)NAN;
  return to_bf16(__double2float_rn(total));
}
