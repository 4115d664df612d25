// The MoE router's arithmetic for one row on one warp (kernels/cuda/router.cu says what it computes): the one
// definition used by router_top_k and by router_top_k_quantize (router_quantize.cu).
// Each lane holds experts lane, lane + 32, ... in its slots. The softmax keeps one order of operations (its bits
// depend on it): the maximum slot by slot, then by butterfly; the exponentials summed slot by slot, then by
// warp_sum; each probability one fp32 division, done once. The selection ranks by key: the probability's bits + 1
// (non-negative floats order as their bits), 0 once taken or past the experts; one redux finds the warp's largest
// key, one more the lowest expert holding it (ties to the lower index). Lane k keeps the k-th choice and writes it.
#pragma once
#include "common.cuh"

// Experts a warp holds (16 slots per lane) and choices it keeps (one per lane).
#define ROUTER_MAX_EXPERTS 512
#define ROUTER_MAX_TOP_K 32

// NaN-propagating maximum: once a NaN is seen it wins.
__device__ __forceinline__ float max_propagating(float a, float b) { return (b > a || b != b) ? b : a; }

// Tree levels of SLOTS values (a power of two): the loops below then have constant trip counts and unroll fully.
__host__ __device__ constexpr int tree_levels(int slots) { return slots <= 1 ? 0 : 1 + tree_levels(slots / 2); }

// The slots' values paired off in a tree by `pick` (a maximum or a minimum of integers: exact in any order).
template <int SLOTS, typename T, typename Pick>
__device__ __forceinline__ T paired_off(T (&level)[SLOTS], Pick pick) {
#pragma unroll
  for (int depth = 1; depth <= tree_levels(SLOTS); depth++) {
#pragma unroll
    for (int slot = 0; slot < SLOTS / 2; slot++) {
      if (slot < (SLOTS >> depth)) level[slot] = pick(level[slot], level[slot + (SLOTS >> depth)]);
    }
  }
  return level[0];
}

// The largest of the keys.
template <int SLOTS>
__device__ __forceinline__ unsigned largest_key(const unsigned (&keys)[SLOTS]) {
  unsigned level[SLOTS];
#pragma unroll
  for (int slot = 0; slot < SLOTS; slot++) level[slot] = keys[slot];
  return paired_off(level, [](unsigned a, unsigned b) { return max(a, b); });
}

// This lane's lowest expert whose key is `key` (0x7fffffff if none).
template <int SLOTS>
__device__ __forceinline__ int lowest_expert_with(const unsigned (&keys)[SLOTS], unsigned key, int lane) {
  int level[SLOTS];
#pragma unroll
  for (int slot = 0; slot < SLOTS; slot++) level[slot] = keys[slot] == key ? lane + 32 * slot : 0x7fffffff;
  return paired_off(level, [](int a, int b) { return min(a, b); });
}

// One lane's share of a routed row: lane k < top_k holds choice k (its expert and renormalised weight); the other
// lanes hold expert −1.
struct RouteChoice {
  int expert;
  float weight;
};

// Every lane of the warp computes the whole row's choices; lane k keeps the k-th. Writes nothing.
template <int SLOTS>
__device__ __forceinline__ RouteChoice choose_in_slots(const bf16* row_logits, int experts, int top_k) {
  const int lane = threadIdx.x & 31;
  float values[SLOTS];
  // Every load is issued before any is used (a slot past the experts reads the last one and never uses it).
#pragma unroll
  for (int slot = 0; slot < SLOTS; slot++) values[slot] = to_float(row_logits[min(lane + 32 * slot, experts - 1)]);
  float maximum = -INFINITY;
#pragma unroll
  for (int slot = 0; slot < SLOTS; slot++) {
    if (lane + 32 * slot < experts) maximum = max_propagating(maximum, values[slot]);
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    maximum = max_propagating(maximum, __shfl_xor_sync(0xffffffffu, maximum, offset));
  }
  // Slots past the experts add +0.0f, which leaves a sum of non-negative terms as it is: 8 slots or 16, one sum.
  float sum = 0.0f;
#pragma unroll
  for (int slot = 0; slot < SLOTS; slot++) {
    const float value = expf(values[slot] - maximum);  // for every slot, then chosen: no branch between them
    values[slot] = lane + 32 * slot < experts ? value : 0.0f;
    sum += values[slot];
  }
  sum = warp_sum(sum);
  float probability[SLOTS];
#pragma unroll
  for (int slot = 0; slot < SLOTS; slot++) probability[slot] = values[slot] / sum;
  int chosen_expert = lane;  // lane k's: the k-th choice
  float chosen = 0.0f;
  float chosen_sum = 0.0f;
  if (sum != sum) {
    // A NaN (or +Inf) logit made every probability NaN: every comparison fails and choice k falls to expert k, which
    // lane k holds in slot 0; the chosen probabilities are added in choice order.
    chosen = probability[0];
    for (int k = 0; k < top_k; k++) chosen_sum += __shfl_sync(0xffffffffu, chosen, k);
  } else {
    // Every probability is in [0, 1], so its bits order it and give it back exactly.
    unsigned keys[SLOTS];
#pragma unroll
    for (int slot = 0; slot < SLOTS; slot++) {
      keys[slot] = lane + 32 * slot < experts ? __float_as_uint(probability[slot]) + 1u : 0u;
    }
    for (int k = 0; k < top_k; k++) {
      const unsigned top = __reduce_max_sync(0xffffffffu, largest_key(keys));
      const int expert = __reduce_min_sync(0xffffffffu, lowest_expert_with(keys, top, lane));
      const float p = __uint_as_float(top - 1u);
      if (lane == k) {
        chosen_expert = expert;
        chosen = p;
      }
      chosen_sum += p;
#pragma unroll
      for (int slot = 0; slot < SLOTS; slot++) {
        if (lane + 32 * slot == expert) keys[slot] = 0u;
      }
    }
  }
  // weight_k = p_k / Σ chosen p, the sum added in choice order.
  if (lane < top_k) return {chosen_expert, chosen / chosen_sum};
  return {-1, 0.0f};
}

// The choices of one row: experts <= ROUTER_MAX_EXPERTS, top_k <= ROUTER_MAX_TOP_K (the launchers refuse more).
__device__ __forceinline__ RouteChoice choose_row(const bf16* row_logits, int experts, int top_k) {
  if (experts <= 256) return choose_in_slots<8>(row_logits, experts, top_k);
  return choose_in_slots<16>(row_logits, experts, top_k);
}

// Routes one row and writes its choices. Returns lane k's expert for lanes below top_k, −1 for the others.
__device__ __forceinline__ int route_row(int* row_ids, float* row_weights, const bf16* row_logits, int experts,
                                         int top_k) {
  const RouteChoice choice = choose_row(row_logits, experts, top_k);
  const int lane = threadIdx.x & 31;
  if (lane < top_k) {
    row_ids[lane] = choice.expert;
    row_weights[lane] = choice.weight;
  }
  return choice.expert;
}
