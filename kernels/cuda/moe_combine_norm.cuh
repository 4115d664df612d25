// The MoE combine fused with the residual add and zero-centred norm after it (moe_combine_norm.cu): one block a row,
// launched with the threads add_rms_norm gives the row (ceil(hidden / 4), thread t holding columns t + i·blockDim),
// so the norm's sum of squares is added in add_rms_norm's order. Each element's combine is moe_combine's fp64 sum in
// ascending expert id (moe_combine.cuh), which no thread mapping changes, so the row has the bits of moe_combine then
// add_rms_norm_bf16 without the combined row ever being stored.
#pragma once
#include "moe_combine.cuh"
#include "rms_norm.cuh"

// A row's rank weights as the sum uses them (bf16-rounded, in fp64), in the combine's order: thread 0 writes them
// beside the order, so no thread holds a register per rank for them.
struct CombineRowWeights {
  double weight[MAX_TOP_K];
};

// Thread 0, after combine_row_order: the weights in `order`'s order.
__device__ __forceinline__ void combine_row_weights(CombineRowWeights& shared_weights, const CombineOrder& order,
                                                    const float* expert_weights, long long row, int top_k) {
  if (threadIdx.x != 0) return;
#pragma unroll
  for (int j = 0; j < MAX_TOP_K; j++) {
    if (j < top_k) shared_weights.weight[j] = combine_weight(expert_weights[row * top_k + order.order[j]]);
  }
}

// One row of moe_combine's output, computed where add_rms_norm_row reads its source (load_pass below).
struct CombineSource {
  // The row's first slot of the expert outputs: [top_k, hidden] bf16.
  const bf16* __restrict__ y;
  // The row of the shared expert's output: [hidden] bf16.
  const bf16* __restrict__ shared;
  // The ranks in ascending expert id and their weights (shared memory).
  const CombineOrder* order;
  const CombineRowWeights* weights;
  int top_k;
  int hidden;
  double scale;
  bool valid;
};

// Ranks whose values a thread requests together: the model's top-8 in one go; more ranks (up to MAX_TOP_K) in further
// groups, each element's sum still added in ascending rank order, so with the same bits and registers to spare.
#define COMBINE_RANK_GROUP 8

// A pass of the thread's combined values (base + t + i·stride, 0 from `cols` on): a group's values and the shared
// expert's values requested before the first is added, so the loads are in flight together.
__device__ __forceinline__ void load_pass(float (&values)[NORM_COLUMNS_PER_THREAD], const CombineSource& row,
                                          int base, int cols, int stride) {
  const bf16 zero = to_bf16(0.0f);
  bf16 shared_values[NORM_COLUMNS_PER_THREAD];
#pragma unroll
  for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) {
    const int column = base + threadIdx.x + i * stride;
    shared_values[i] = column < cols ? row.shared[column] : zero;
  }
  double sums[NORM_COLUMNS_PER_THREAD] = {};
#pragma unroll
  for (int group = 0; group < MAX_TOP_K; group += COMBINE_RANK_GROUP) {
    if (group >= row.top_k) break;
    bf16 terms[COMBINE_RANK_GROUP][NORM_COLUMNS_PER_THREAD];
#pragma unroll
    for (int g = 0; g < COMBINE_RANK_GROUP; g++) {
      if (group + g < row.top_k) {
        const bf16* expert = row.y + row.order->order[group + g] * row.hidden;
#pragma unroll
        for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) {
          const int column = base + threadIdx.x + i * stride;
          terms[g][i] = column < cols ? expert[column] : zero;
        }
      }
    }
#pragma unroll
    for (int g = 0; g < COMBINE_RANK_GROUP; g++) {
      if (group + g < row.top_k) {
        const double weight = row.weights->weight[group + g];
#pragma unroll
        for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) sums[i] = combine_term(sums[i], weight, terms[g][i]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < NORM_COLUMNS_PER_THREAD; i++) {
    const int column = base + threadIdx.x + i * stride;
    values[i] = column < cols ? to_float(combine_result(sums[i], row.scale, shared_values[i], row.valid)) : 0.0f;
  }
}

// out, x: [rows, hidden] bf16 (x the residual stream, updated in place); y: [rows · top_k, hidden] bf16 by slot;
// expert_ids, expert_weights: [rows, top_k]; shared: [rows, hidden] bf16; shared_gate: [rows] bf16; weight: [hidden].
// No pointer overlaps another. hidden <= 4 · MOE_NORM_THREADS (the launcher refuses more). NORM_UNROUNDED is the
// contract's control only.
#define MOE_NORM_THREADS 512
#define MOE_COMBINE_NORM_KERNEL(ENTRY, WEIGHT, NORM_UNROUNDED)                                                       \
  extern "C" __global__ void __launch_bounds__(MOE_NORM_THREADS)                                                    \
      ENTRY(bf16* __restrict__ out, bf16* __restrict__ x, const bf16* __restrict__ y,                               \
            const int* __restrict__ expert_ids, const float* __restrict__ expert_weights,                           \
            const bf16* __restrict__ shared, const bf16* __restrict__ shared_gate, const WEIGHT* __restrict__ weight, \
            int rows, int top_k, int hidden, int experts, float eps) {                                              \
    KERNEL_PROLOGUE();                                                                                              \
    const long long row = blockIdx.x;                                                                               \
    if (row >= rows) return;                                                                                        \
    __shared__ CombineOrder row_order;                                                                              \
    __shared__ CombineRowWeights row_weights;                                                                       \
    combine_row_order(row_order, expert_ids, row, top_k, experts);                                                  \
    combine_row_weights(row_weights, row_order, expert_weights, row, top_k);                                        \
    __syncthreads();                                                                                                \
    const CombineSource source{y + row * top_k * hidden, shared + row * hidden, &row_order, &row_weights, top_k,    \
                               hidden, combine_gate_scale(shared_gate, row), row_order.valid != 0};                 \
    add_rms_norm_row<WEIGHT, CombineSource, NORM_UNROUNDED>(out + row * hidden, x + row * hidden, source, weight,    \
                                                            hidden, eps);                                           \
  }
