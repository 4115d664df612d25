// The Gated DeltaNet's decode recurrence with its gated RMSNorm in one launch (delta_net.cu's
// delta_net_recurrence_norm_bf16), shared with the contract's control (kernels/controls/delta_net_controls.cu).
// Decode only (every sequence one row), in clusters of the RECURRENCE_COLUMN_GROUPS blocks of a head: each block
// keeps its 32 outputs in shared memory; after a cluster barrier the head's first block norms the row from all four
// (rms_norm_row with the 32 threads the gated norm's own launch has, the rest of the block adding +0 as that launch's
// missing warps would), so `normed` has the bits of delta_net_recurrence_bf16 then rms_norm_gated_bf16. A second
// barrier keeps every block's shared memory alive until that read is done. z (the gate) and normed: [T, Vh, 128]
// bf16; norm_weight: [128] bf16; cols: 128 (the norm's width, passed as its own launch passes it).
#pragma once
#include "delta_net.cuh"
#include "rms_norm.cuh"
#if __CUDA_ARCH__ >= 900
#include <cooperative_groups.h>
#endif

// The head's outputs of one decode row, spread over the cluster's blocks' shared memory: column c is entry c % 32 of
// block c / 32 (the recurrence's column groups).
constexpr int RECURRENCE_COLUMN_GROUPS = HEAD_DIM / COLUMNS_PER_BLOCK;
struct ClusterHeadRow {
  const float* parts[RECURRENCE_COLUMN_GROUPS];
};
__device__ __forceinline__ float element_at(const ClusterHeadRow& row, int column) {
  static_assert(RECURRENCE_COLUMN_GROUPS == 4, "one select a column group");
  const int part = column / COLUMNS_PER_BLOCK;
  // Selected without a run-time index, so `parts` stays in registers.
  const float* values = part == 0 ? row.parts[0] : part == 1 ? row.parts[1] : part == 2 ? row.parts[2] : row.parts[3];
  return values[column % COLUMNS_PER_BLOCK];
}

// FIRST_PART_ONLY (the contract's control only): the norm reads every column group from the head's first block.
template <bool FIRST_PART_ONLY>
__device__ __forceinline__ void recurrence_norm(bf16* out, const bf16* qkv, long long qkv_row_stride, const float* g,
                                                const float* beta, float* state, const int* sequences, int key_heads,
                                                int value_heads, bf16* normed, const bf16* gate,
                                                const bf16* norm_weight, int cols, float eps) {
#if __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  // The gated norm's block size for a 128-column row (src/backend/cuda/ops/rmsNorm.ts: ceil(cols / 4) threads).
  constexpr int GATED_NORM_THREADS = HEAD_DIM / NORM_COLUMNS_PER_THREAD;
  __shared__ float kept[COLUMNS_PER_BLOCK];
  recurrence<FAULT_NONE, true>(out, qkv, qkv_row_stride, g, beta, state, sequences, key_heads, value_heads, kept);
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  if (cluster.block_rank() == 0) {
    ClusterHeadRow row;
#pragma unroll
    for (int part = 0; part < RECURRENCE_COLUMN_GROUPS; part++) {
      row.parts[part] = cluster.map_shared_rank(kept, FIRST_PART_ONLY ? 0 : part);
    }
    const Sequence sequence = read_sequence(sequences, blockIdx.z);
    const long long head_row = (long long)sequence.first_row * value_heads + blockIdx.y;
    rms_norm_row<true, true>(normed + head_row * cols, row, gate + head_row * cols, norm_weight, cols, eps, false,
                             GATED_NORM_THREADS);
  }
  cluster.sync();
#endif
}

#define DELTA_NET_RECURRENCE_NORM_KERNEL(ENTRY, FIRST_PART_ONLY)                                                  \
  extern "C" __global__ void __launch_bounds__(RECURRENCE_THREADS)                                                \
      ENTRY(bf16* out, const bf16* qkv, long long qkv_row_stride, const float* g, const float* beta, float* state,  \
            const int* sequences, int key_heads, int value_heads, bf16* normed, const bf16* gate,                   \
            const bf16* norm_weight, int cols, float eps) {                                                         \
    KERNEL_PROLOGUE();                                                                                              \
    recurrence_norm<FIRST_PART_ONLY>(out, qkv, qkv_row_stride, g, beta, state, sequences, key_heads, value_heads, \
                                       normed, gate, norm_weight, cols, eps);                                       \
  }
