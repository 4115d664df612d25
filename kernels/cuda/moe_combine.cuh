// The MoE combine's arithmetic (kernels/cuda/moe_route.cu says what it computes), one definition for moe_combine and
// for moe_combine_add_rms_norm, which hands each combined element to the residual add and norm after it (and for the
// contract's control of that kernel, kernels/controls/moe_route_controls.cu).
#pragma once
#include "common.cuh"
#include "rms_norm.cuh"

#define MAX_TOP_K 16

// Thread 0's part: the row's ranks in ascending expert id (ties by rank) into `order`, and whether every id is in
// range. The caller syncs before reading them.
__device__ __forceinline__ void order_row_ranks(int* order, int* row_valid, const int* row_ids, int top_k,
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

// The element's total with the shared expert, rounded fp64 → fp32; NaN for a row with an id out of range. The combine
// stores it rounded once more, to bf16.
__device__ __forceinline__ float combined_total(double sum, double scale, bf16 shared, bool valid) {
  const double total = valid ? sum + scale * (double)to_float(shared) : (double)NAN;
  return __double2float_rn(total);
}

// A thread's columns of the combine as one load: 8 bf16 (moe_combine) or 4 (the fused combine's 512 threads).
template <int COLUMNS>
struct ColumnChunk;
template <>
struct ColumnChunk<8> {
  typedef uint4 type;
};
template <>
struct ColumnChunk<4> {
  typedef uint2 type;
};

// The fp32 totals of COLUMNS columns of one row from `column`, the ranks added in `order`: every rank's weight and
// chunk requested before the first is added, so the loads are in flight together. An element's sum is the same
// whatever COLUMNS is.
//   y_row: the row's first slot [top_k, hidden]; row_weights: the row's [top_k]; shared_row: [hidden]
template <int COLUMNS>
__device__ __forceinline__ void combine_totals(float (&totals)[COLUMNS], const bf16* y_row, const float* row_weights,
                                               const int* order, const bf16* shared_row, double scale, bool valid,
                                               int top_k, int hidden, int column) {
  typedef typename ColumnChunk<COLUMNS>::type Chunk;
  float weights[MAX_TOP_K];
  Chunk chunks[MAX_TOP_K];
#pragma unroll
  for (int j = 0; j < MAX_TOP_K; j++) {
    if (j < top_k) {
      const int k = order[j];
      weights[j] = row_weights[k];
      chunks[j] = *reinterpret_cast<const Chunk*>(y_row + k * hidden + column);
    }
  }
  const Chunk shared_chunk = *reinterpret_cast<const Chunk*>(shared_row + column);
  double sums[COLUMNS];
#pragma unroll
  for (int i = 0; i < COLUMNS; i++) sums[i] = 0.0;
#pragma unroll
  for (int j = 0; j < MAX_TOP_K; j++) {
    if (j < top_k) {
      const double weight = rank_weight(weights[j]);
      const bf16* values = reinterpret_cast<const bf16*>(&chunks[j]);
#pragma unroll
      for (int i = 0; i < COLUMNS; i++) sums[i] = add_rank_term(sums[i], weight, values[i]);
    }
  }
  const bf16* shared_values = reinterpret_cast<const bf16*>(&shared_chunk);
#pragma unroll
  for (int i = 0; i < COLUMNS; i++) totals[i] = combined_total(sums[i], scale, shared_values[i], valid);
}

// Combined columns as moe_combine stores them: each total rounded to bf16.
template <int COLUMNS>
__device__ __forceinline__ typename ColumnChunk<COLUMNS>::type to_bf16_chunk(const float (&totals)[COLUMNS]) {
  typename ColumnChunk<COLUMNS>::type result;
  bf16* values = reinterpret_cast<bf16*>(&result);
#pragma unroll
  for (int i = 0; i < COLUMNS; i++) values[i] = to_bf16(totals[i]);
  return result;
}

// The widest row the fused combine and norm takes: the norm's launch then has 512 threads (4 columns a thread), and
// the combined row fits its shared staging. moeCombineNorm.ts holds the same numbers.
#define MOE_COMBINE_NORM_MOST_THREADS 512
#define MOE_COMBINE_NORM_MOST_COLUMNS (4 * MOE_COMBINE_NORM_MOST_THREADS)

// moe_combine_add_rms_norm's row (moe_route.cu): the block's threads combine the row 4 columns at a time with
// moe_combine's arithmetic (combine_totals) into shared memory, then norm it as rms_norm.cu's add_rms_norm launch of the same
// threads does (4 columns a thread: its sum of squares' order), so x and out have the bits of moe_combine then
// add_rms_norm; the combined row is never stored. `early`: the norm's weights, loaded before the kernel waited.
// UNROUNDED stages the fp32 totals and adds them to x without their bf16 rounding: only the contract's control asks
// for that.
template <bool UNROUNDED, typename Weight>
__device__ __forceinline__ void combine_add_rms_norm_row(bf16* out, bf16* x, const bf16* y, const int* expert_ids,
                                                         const float* expert_weights, const bf16* shared,
                                                         const bf16* shared_gate, const Weight* weight,
                                                         const PassWeights& early, long long row, int top_k,
                                                         int hidden, int experts, float eps) {
  __shared__ int order[MAX_TOP_K];
  __shared__ int row_valid;
  __shared__ __align__(16) float staged[MOE_COMBINE_NORM_MOST_COLUMNS];  // bf16 values, or the control's fp32 totals
  if (threadIdx.x == 0) {
    order_row_ranks(order, &row_valid, expert_ids + row * top_k, top_k, experts);
  }
  __syncthreads();
  const bool valid = row_valid != 0;
  const double scale = shared_expert_scale(shared_gate[row]);
  for (int column = threadIdx.x * 4; column < hidden; column += blockDim.x * 4) {
    float totals[4];
    combine_totals(totals, y + row * top_k * hidden, expert_weights + row * top_k, order, shared + row * hidden, scale,
                   valid, top_k, hidden, column);
    if (UNROUNDED) {
      reinterpret_cast<float4*>(staged)[column / 4] = make_float4(totals[0], totals[1], totals[2], totals[3]);
    } else {
      reinterpret_cast<uint2*>(staged)[column / 4] = to_bf16_chunk(totals);
    }
  }
  __syncthreads();
  if (UNROUNDED) {
    const float* combined = staged;
    add_rms_norm_row(out + row * hidden, x + row * hidden, combined, weight, hidden, eps, early);
  } else {
    const bf16* combined = reinterpret_cast<const bf16*>(staged);
    add_rms_norm_row(out + row * hidden, x + row * hidden, combined, weight, hidden, eps, early);
  }
}

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
