// MoE router: softmax over each row's expert logits, top-k, renormalise the k chosen weights to sum 1.
//   logits: [rows, experts] bf16; expert_ids: [rows, top_k] int32; expert_weights: [rows, top_k] fp32
//   p_e = exp(l_e − max) / Σ exp(l − max) in fp32; the k largest p are taken in descending order, ties to the
//   lower expert index; weight_j = p_j / Σ_chosen p. A NaN logit (or +inf, through inf − inf) makes every p NaN,
//   and then the choice falls to the lowest unchosen indices, as a sequential `p > best` scan does.
// One warp per row (router.cuh); experts <= 512, top_k <= 32.
#include "router.cuh"

extern "C" __global__ void router_top_k(int* expert_ids, float* expert_weights, const bf16* logits, int rows,
                                        int experts, int top_k) {
  KERNEL_PROLOGUE();
  const long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= rows) return;
  route_row(expert_ids + row * top_k, expert_weights + row * top_k, logits + row * experts, experts, top_k);
}
