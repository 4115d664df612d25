// SwiGLU's arithmetic, shared by swiglu_bf16 and the segmented GEMM's SwiGLU combine (swiglu.cu): h = silu(gate) · up
// in fp32 from bf16 gate and up, rounded once to bf16.
#pragma once
#include "gemm_segments.cuh"

__device__ __forceinline__ bf16 swiglu_value(float gate, float up) { return to_bf16(silu(gate) * up); }

// A split segment's element rounded to bf16 as gemm_segments_combine stores it. CHUNKS_DESCENDING (the contract's
// control only) adds the partials from the last chunk down.
template <bool CHUNKS_DESCENDING>
__device__ __forceinline__ float swiglu_input(const GemmSegment& segment, long long elements, long long element) {
  if constexpr (CHUNKS_DESCENDING) {
    float total = segment.partials[(segment.splits - 1) * elements + element];
    for (int c = segment.splits - 2; c >= 0; c--) total = total + segment.partials[c * elements + element];
    return to_float(to_bf16(total));
  }
  return to_float(to_bf16(gemm_segment_total(segment, elements, element)));
}

// The segmented GEMM's combine with segments 0 and 1 a SwiGLU's gate and up (both split K, the same N): thread i of
// the first M·N writes h[i] = swiglu_value(gate[i], up[i]) from gate's and up's totals, each rounded to bf16 as the
// combine would store it (neither is stored); the threads after them combine the other split segments' elements as
// gemm_segments_combine does. So h has the bits of gemm_segments_combine then swiglu_bf16, one launch fewer.
template <bool CHUNKS_DESCENDING>
__device__ __forceinline__ void swiglu_segments_combine(bf16* h, const GemmSegmentTable& table) {
  const long long pair = (long long)table.M * table.n[0];
  const long long total_elements = gemm_segments_split_elements(table) - pair;
  for (long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x; index < total_elements;
       index += (long long)gridDim.x * blockDim.x) {
    if (index < pair) {
      const float gate = swiglu_input<CHUNKS_DESCENDING>(gemm_segment_at<0>(table, index), pair, index);
      const float up = swiglu_input<CHUNKS_DESCENDING>(gemm_segment_at<0>(table, pair + index), pair, index);
      h[index] = swiglu_value(gate, up);
    } else {
      gemm_segments_combine_element(table, pair + index);
    }
  }
}

#define SWIGLU_SEGMENTS_COMBINE_KERNEL(ENTRY, CHUNKS_DESCENDING)                                                    \
  extern "C" __global__ void ENTRY(GEMM_SEGMENT_PARAMETERS, bf16* __restrict__ h) {                                \
    KERNEL_PROLOGUE();                                                                                              \
    swiglu_segments_combine<CHUNKS_DESCENDING>(h, GEMM_SEGMENT_TABLE);                                              \
  }
