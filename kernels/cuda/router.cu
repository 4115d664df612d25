// MoE router: softmax over each row's expert logits, top-k, renormalise the k chosen weights to sum 1.
//   logits: [rows, experts] bf16; expert_ids: [rows, top_k] int32; expert_weights: [rows, top_k] fp32
//   p_e = exp(l_e − max) / Σ exp(l − max) in fp32; the k largest p are taken in descending order, ties to the
//   lower expert index; weight_j = p_j / Σ_chosen p. A NaN logit (or +inf, through inf − inf) makes every p NaN,
//   and then the choice falls to the lowest unchosen indices, as a sequential `p > best` scan does.
// One warp per row; each lane holds experts lane, lane + 32, ...; experts <= 32 · MAX_PER_LANE.
#include "common.cuh"

#define MAX_PER_LANE 16

struct Candidate {
  float probability;
  int expert;
};

// Whether a ranks before b: larger probability first; equal or unordered (NaN) → lower index first.
__device__ __forceinline__ bool ranks_before(Candidate a, Candidate b) {
  if (b.expert < 0) return a.expert >= 0;
  if (a.expert < 0) return false;
  if (a.probability > b.probability) return true;
  if (a.probability < b.probability) return false;
  return a.expert < b.expert;
}

// NaN-propagating maximum: once a NaN is seen it wins.
__device__ __forceinline__ float max_propagating(float a, float b) { return (b > a || b != b) ? b : a; }

extern "C" __global__ void router_top_k(int* expert_ids, float* expert_weights, const bf16* logits, int rows,
                                        int experts, int top_k) {
  KERNEL_PROLOGUE();
  const int lane = threadIdx.x & 31;
  const long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= rows) return;
  const bf16* row_logits = logits + row * experts;
  float values[MAX_PER_LANE];
  float maximum = -INFINITY;
#pragma unroll
  for (int slot = 0; slot < MAX_PER_LANE; slot++) {
    const int expert = lane + 32 * slot;
    values[slot] = expert < experts ? to_float(row_logits[expert]) : -INFINITY;
    if (expert < experts) maximum = max_propagating(maximum, values[slot]);
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    maximum = max_propagating(maximum, __shfl_xor_sync(0xffffffffu, maximum, offset));
  }
  float sum = 0.0f;
#pragma unroll
  for (int slot = 0; slot < MAX_PER_LANE; slot++) {
    const int expert = lane + 32 * slot;
    values[slot] = expert < experts ? expf(values[slot] - maximum) : 0.0f;
    sum += values[slot];
  }
  sum = warp_sum(sum);
  unsigned taken = 0;  // bit s: this lane's slot s was chosen
  float chosen_sum = 0.0f;
  int* row_ids = expert_ids + row * top_k;
  float* row_weights = expert_weights + row * top_k;
  for (int k = 0; k < top_k; k++) {
    Candidate best = {0.0f, -1};
#pragma unroll
    for (int slot = 0; slot < MAX_PER_LANE; slot++) {
      const int expert = lane + 32 * slot;
      if (expert < experts && !(taken & (1u << slot))) {
        const Candidate candidate = {values[slot] / sum, expert};
        if (ranks_before(candidate, best)) best = candidate;
      }
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      Candidate other;
      other.probability = __shfl_xor_sync(0xffffffffu, best.probability, offset);
      other.expert = __shfl_xor_sync(0xffffffffu, best.expert, offset);
      if (ranks_before(other, best)) best = other;
    }
    if (best.expert >= 0 && (best.expert & 31) == lane) taken |= 1u << (best.expert >> 5);
    if (lane == 0) {
      row_ids[k] = best.expert;
      row_weights[k] = best.probability;
    }
    chosen_sum += best.probability;
  }
  // Lane 0 rescales what it wrote itself above, so no other thread's writes are involved.
  if (lane == 0) {
    for (int k = 0; k < top_k; k++) row_weights[k] = row_weights[k] / chosen_sum;
  }
}
