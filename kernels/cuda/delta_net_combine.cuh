// The Gated DeltaNet's input projection combined straight into the conv and the gates, for decode calls (every
// sequence one row). The projection is one segmented GEMM (gemm_segments.cuh) of segments q|k|v, z, b and a
// (src/backend/cuda/delta-net-block.ts); where q|k|v splits K, this combine replaces gemm_segments_combine, the conv
// (delta_net_conv_silu_bf16) and the gates (delta_net_gates_*): one launch where there were three.
//   q|k|v: each element's chunk partials added in ascending order and rounded to bf16, stored as
//          gemm_segments_combine stores it, then conv_silu_value with the slot's carried history, written to
//          `convolved` [M, C]; the slot's history becomes (h1, h2, x), the bits conv_silu writes for a one-row sequence
//   z (and b, a where they split): combined and stored as gemm_segments_combine stores them
//   g, beta [M, Vh]: gate_values of b's and a's bf16 values (their combined totals, or the tile kernel's stores where
//          they did not split)
// So every output has the bits of gemm_segments_combine, then delta_net_conv_silu_bf16 and delta_net_gates_*.
// One thread per element: (sequence, channel) of q|k|v first, then the other split elements, then (row, head).
// A thread alone reads and writes its channel's history (no two sequences of a call share a slot).
#pragma once
#include "delta_net.cuh"
#include "gemm_segments.cuh"

enum DeltaNetCombineSegment { SEGMENT_QKV = 0, SEGMENT_Z = 1, SEGMENT_B = 2, SEGMENT_A = 3 };
// The contract's control only: the conv reads q|k|v's fp32 total instead of its bf16 rounding.
enum DeltaNetCombineFault { COMBINE_FAULT_NONE = 0, COMBINE_FAULT_CONV_INPUT_UNROUNDED = 1 };

// Element `element` of segment s as gemm_segments_combine stores it, widened.
__device__ __forceinline__ float segment_value(const GemmSegmentTable& table, int s, long long element) {
  return to_float(gemm_segment_bf16(table, s, element, false));
}

template <typename Parameter, int FAULT>
__device__ __forceinline__ void delta_net_segments_combine(const GemmSegmentTable& table, bf16* convolved,
                                                           const bf16* conv_weight, bf16* conv_state,
                                                           const int* sequences, float* g, float* beta,
                                                           const Parameter* a_log, const Parameter* dt_bias) {
  const int channels = table.n[SEGMENT_QKV];
  const int value_heads = table.n[SEGMENT_B];
  const long long conv_elements = (long long)table.M * channels;
  const long long split_elements = gemm_segments_split_elements(table);
  const long long total = split_elements + (long long)table.M * value_heads;
  for (long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x; index < total;
       index += (long long)gridDim.x * blockDim.x) {
    if (index < conv_elements) {
      const int q = (int)(index / channels);
      const int channel = (int)(index - (long long)q * channels);
      const Sequence sequence = read_sequence(sequences, q);
      const long long element = (long long)sequence.first_row * channels + channel;
      const float sum = gemm_segment_total(gemm_segment_at<0>(table, element), conv_elements, element);
      const bf16 stored = to_bf16(sum);
      static_cast<bf16*>(table.y[SEGMENT_QKV])[element] = stored;
      const float current = FAULT == COMBINE_FAULT_CONV_INPUT_UNROUNDED ? sum : to_float(stored);
      bf16* state = conv_state + (long long)sequence.slot * CONV_HISTORY * channels + channel;
      float w[CONV_WIDTH];
#pragma unroll
      for (int j = 0; j < CONV_WIDTH; j++) w[j] = to_float(conv_weight[(long long)channel * CONV_WIDTH + j]);
      float history[CONV_HISTORY];
#pragma unroll
      for (int j = 0; j < CONV_HISTORY; j++) history[j] = to_float(state[(long long)j * channels]);
      convolved[element] = conv_silu_value(w, history, current);
#pragma unroll
      for (int j = 0; j + 1 < CONV_HISTORY; j++) state[(long long)j * channels] = to_bf16(history[j + 1]);
      state[(long long)(CONV_HISTORY - 1) * channels] = stored;
    } else if (index < split_elements) {
      gemm_segments_combine_element(table, index);
    } else {
      const long long element = index - split_elements;
      const int head = (int)(element % value_heads);
      gate_values(segment_value(table, SEGMENT_B, element), segment_value(table, SEGMENT_A, element), a_log, dt_bias,
                  head, g[element], beta[element]);
    }
  }
}

#define DELTA_NET_COMBINE_KERNEL(ENTRY, PARAMETER, FAULT)                                                          \
  extern "C" __global__ void ENTRY(GEMM_SEGMENT_PARAMETERS, bf16* __restrict__ convolved,                          \
                                   const bf16* __restrict__ conv_weight, bf16* __restrict__ conv_state,             \
                                   const int* __restrict__ sequences, float* __restrict__ g,                        \
                                   float* __restrict__ beta, const PARAMETER* __restrict__ a_log,                   \
                                   const PARAMETER* __restrict__ dt_bias) {                                         \
    KERNEL_PROLOGUE();                                                                                              \
    delta_net_segments_combine<PARAMETER, FAULT>(GEMM_SEGMENT_TABLE, convolved, conv_weight, conv_state, sequences, \
                                                 g, beta, a_log, dt_bias);                                          \
  }
