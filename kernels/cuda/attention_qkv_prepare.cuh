// The attention's q|k|v projection combined straight into its prepare, for calls whose projection splits K. The
// projection is one segmented GEMM (gemm_segments.cuh) of segments q (per head [query | gate] when gated), k and v
// (src/backend/cuda/attention-block.ts); this launch replaces gemm_segments_combine and attention_prepare_bf16.
// One block per (row, head) in the prepare's order (query heads, then key heads), 2·head_dim threads:
//   1. each thread one element of the head's columns (the query head's [query | gate], or the key head's k then v):
//      its chunk partials added in ascending order and rounded to bf16, stored as gemm_segments_combine stores it
//      (gemm_segment_bf16), and kept in shared memory;
//   2. prepare_head (attention.cuh) on those values, the norm's squares summed by the first threads in
//      rms_norm_bf16's mapping for head_dim columns (the prepare kernel's block), the rest giving +0.
// So every output has the bits of gemm_segments_combine followed by attention_prepare_bf16, the projection's own
// outputs included. No block reads another block's results: a block's elements are its own head's. The kernel takes
// its block's (row, head), and each thread's norm weight and rotary frequency, before the wait (PrepareEarly).
#pragma once
#include "attention.cuh"
#include "gemm_segments.cuh"

enum AttentionQkvSegment { QKV_SEGMENT_Q = 0, QKV_SEGMENT_K = 1, QKV_SEGMENT_V = 2 };
// The contract's control only: a gated query head prepared from its gate half instead of its query half.
enum AttentionQkvFault { QKV_FAULT_NONE = 0, QKV_FAULT_GATE_AS_QUERY = 1 };

// The prepare kernel's block for head_dim columns (src/backend/cuda/ops/attention.ts: rms_norm_bf16's width).
__device__ __forceinline__ int prepare_threads(int head_dim) { return ((head_dim + 3) / 4 + 31) / 32 * 32; }

template <int FAULT>
__device__ __forceinline__ void attention_qkv_prepare(const GemmSegmentTable& table, bf16* q_out, bf16* keys,
                                                      bf16* values, const bf16* q_norm, const bf16* k_norm,
                                                      const int* row_table, int rows, int query_heads, int kv_heads,
                                                      int head_dim, int rotary_dims, float theta, int interleaved,
                                                      int gated, int slots, int capacity, float eps,
                                                      PrepareBlock block, const PrepareEarly& early) {
  __shared__ bf16 combined[2 * ATTENTION_MAX_PREPARE_DIM];
  __shared__ float normed[ATTENTION_MAX_PREPARE_DIM];
  __shared__ float scratch[32];
  const auto [row, head] = block;
  if (row >= rows) return;
  const bool is_query = head < query_heads;
  const int width = is_query ? head_dim * (gated ? 2 : 1) : 2 * head_dim;
  for (int e = threadIdx.x; e < width; e += blockDim.x) {
    int s = QKV_SEGMENT_Q;
    long long element = (long long)row * table.n[QKV_SEGMENT_Q] + (long long)head * width + e;
    if (!is_query) {
      const bool value = e >= head_dim;
      s = value ? QKV_SEGMENT_V : QKV_SEGMENT_K;
      element = (long long)row * table.n[s] + (long long)(head - query_heads) * head_dim + (value ? e - head_dim : e);
    }
    combined[e] = gemm_segment_bf16(table, s, element, true);
  }
  __syncthreads();
  int slot, position;
  const bool valid = read_row(row_table, row, slots, capacity, slot, position);
  const bool gate_as_query = FAULT == QKV_FAULT_GATE_AS_QUERY && is_query && gated;
  const ProjectedHead projected = {gate_as_query ? combined + head_dim : combined,
                                   is_query ? nullptr : combined + head_dim};
  prepare_head<PREPARE_EXACT>(q_out, keys, values, projected, q_norm, k_norm, row, head, query_heads, kv_heads,
                              head_dim, rotary_dims, theta, interleaved, valid, slot, position, capacity, eps,
                              prepare_threads(head_dim), normed, scratch, early);
}

#define ATTENTION_QKV_PREPARE_KERNEL(ENTRY, FAULT)                                                                  \
  extern "C" __global__ void __launch_bounds__(2 * ATTENTION_MAX_PREPARE_DIM) ENTRY(                               \
      GEMM_SEGMENT_PARAMETERS, bf16* q_out, bf16* keys, bf16* values, const bf16* q_norm, const bf16* k_norm,       \
      const int* row_table, int rows, int query_heads, int kv_heads, int head_dim, int rotary_dims, float theta,    \
      int interleaved, int gated, int slots, int capacity, float eps) {                                            \
    allow_dependent_launch();                                                                                       \
    const PrepareBlock block = prepare_block(query_heads, kv_heads);                                                \
    const PrepareEarly early = prepare_early(q_norm, k_norm, block.head < query_heads, head_dim, rotary_dims, theta); \
    wait_for_previous_grids();                                                                                      \
    attention_qkv_prepare<FAULT>(GEMM_SEGMENT_TABLE, q_out, keys, values, q_norm, k_norm, row_table, rows,         \
                                 query_heads, kv_heads, head_dim, rotary_dims, theta, interleaved, gated, slots,    \
                                 capacity, eps, block, early);                                                      \
  }
