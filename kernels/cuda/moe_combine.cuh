// The MoE combine's arithmetic (kernels/cuda/moe_route.cu says what it computes), one definition for moe_combine and
// for moe_combine_add_rms_norm, which hands each combined element to the residual add and norm after it (and for the
// contract's control of that kernel, kernels/controls/moe_route_controls.cu).
#pragma once
#include "common.cuh"
#include "rms_norm.cuh"

#define MAX_TOP_K 16

// Thread 0's part: the row's ranks in ascending expert id (ties by rank) into `order`, their weights as stored into
// `ordered_weights` (null: not wanted), and whether every id is in range. The caller syncs before reading them.
__device__ __forceinline__ void order_row_ranks(int* order, float* ordered_weights, int* row_valid,
                                                const int* row_ids, const float* row_weights, int top_k,
                                                int experts) {
  int ids[MAX_TOP_K];
  bool valid = true;
#pragma unroll
  for (int k = 0; k < MAX_TOP_K; k++) ids[k] = k < top_k ? row_ids[k] : 0;
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
      if (ordered_weights != nullptr) ordered_weights[position] = row_weights[k];
    }
  }
  *row_valid = valid;
}

// sigmoid(g) in fp64: the shared expert's scale.
__device__ __forceinline__ double shared_expert_scale(bf16 gate) {
  const double g = (double)to_float(gate);
  return 1.0 / (1.0 + exp(-g));
}

// A rank's weight as the combine multiplies it: rounded to bf16, then widened.
__device__ __forceinline__ double rank_weight(float weight) { return (double)to_float(to_bf16(weight)); }

// One rank's term added to an element's fp64 sum: weight · y (a product of two bf16 values, exact in fp64).
__device__ __forceinline__ double add_rank_term(double sum, double weight, bf16 value) {
  return sum + weight * (double)to_float(value);
}

// The element's total with the shared expert, rounded fp64 → fp32 → bf16; NaN for a row with an id out of range.
__device__ __forceinline__ bf16 combined_element(double sum, double scale, bf16 shared, bool valid) {
  const double total = valid ? sum + scale * (double)to_float(shared) : (double)NAN;
  return to_bf16(__double2float_rn(total));
}

// A row's combined experts read column by column, as rms_norm.cuh's rows are (element_at): each element's ranks are
// added in the row's order, so it has the bits moe_combine stores. UNROUNDED hands on the fp32 total without its bf16
// rounding: only the contract's control asks for that.
template <bool UNROUNDED>
struct CombinedRow {
  const bf16* y;                 // the row's first slot: [top_k, hidden]
  const bf16* shared;            // the row's shared expert output
  const int* order;              // order_row_ranks'
  const float* ordered_weights;  // order_row_ranks'
  int top_k;
  int hidden;
  double scale;
  bool valid;
};

template <bool UNROUNDED>
__device__ __forceinline__ float element_at(const CombinedRow<UNROUNDED>& row, int column) {
  double sum = 0.0;
#pragma unroll
  for (int j = 0; j < MAX_TOP_K; j++) {
    if (j < row.top_k) {
      sum = add_rank_term(sum, rank_weight(row.ordered_weights[j]), row.y[row.order[j] * row.hidden + column]);
    }
  }
  if (UNROUNDED) return __double2float_rn(row.valid ? sum + row.scale * (double)to_float(row.shared[column]) : NAN);
  return to_float(combined_element(sum, row.scale, row.shared[column], row.valid));
}

// moe_combine_add_rms_norm's row (moe_route.cu): the norm's threads (rms_norm.cu's add_rms_norm launch: 4 columns a
// thread) combine columns t, t + B, ... as moe_combine does and add each rounded element to x, so x and out have the
// bits of moe_combine then add_rms_norm; the combined row is never stored. `early`: the norm's weights, loaded before
// the kernel waited.
template <bool UNROUNDED, typename Weight>
__device__ __forceinline__ void combine_add_rms_norm_row(bf16* out, bf16* x, const bf16* y, const int* expert_ids,
                                                         const float* expert_weights, const bf16* shared,
                                                         const bf16* shared_gate, const Weight* weight,
                                                         const PassWeights& early, long long row, int top_k,
                                                         int hidden, int experts, float eps) {
  __shared__ int order[MAX_TOP_K];
  __shared__ float ordered_weights[MAX_TOP_K];
  __shared__ int row_valid;
  if (threadIdx.x == 0) {
    order_row_ranks(order, ordered_weights, &row_valid, expert_ids + row * top_k, expert_weights + row * top_k,
                    top_k, experts);
  }
  __syncthreads();
  const CombinedRow<UNROUNDED> combined = {y + row * top_k * hidden,
                                           shared + row * hidden,
                                           order,
                                           ordered_weights,
                                           top_k,
                                           hidden,
                                           shared_expert_scale(shared_gate[row]),
                                           row_valid != 0};
  add_rms_norm_row(out + row * hidden, x + row * hidden, combined, weight, hidden, eps, early);
}

// The most threads the norm's launch may have here (a row of at most 2048 columns): the kernel holds 100 registers a
// thread. moeCombineNorm.ts holds the same number.
#define MOE_COMBINE_NORM_MOST_THREADS 512

// out [rows, hidden] (must not alias x), x [rows, hidden] (written back); one block per row of the norm's threads.
#define MOE_COMBINE_ADD_RMS_NORM_KERNEL(ENTRY, WEIGHT, UNROUNDED)                                                    \
  extern "C" __global__ void __launch_bounds__(MOE_COMBINE_NORM_MOST_THREADS)                                     \
      ENTRY(bf16* out, bf16* x, const bf16* y, const int* expert_ids, const float* expert_weights,                  \
            const bf16* shared, const bf16* shared_gate, const WEIGHT* weight, int rows, int top_k, int hidden,     \
            int experts, float eps) {                                                                               \
    allow_dependent_launch();                                                                                       \
    const PassWeights early = early_pass_weights(weight, hidden, hidden, blockDim.x);                               \
    wait_for_previous_grids();                                                                                      \
    const long long row = blockIdx.x;                                                                               \
    if (row >= rows) return;                                                                                        \
    combine_add_rms_norm_row<UNROUNDED>(out, x, y, expert_ids, expert_weights, shared, shared_gate, weight, early,  \
                                        row, top_k, hidden, experts, eps);                                          \
  }
