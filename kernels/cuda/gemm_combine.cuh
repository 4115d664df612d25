// The split-K GEMM's combine arithmetic, one definition for every kernel that adds chunk partials: gemm_combine, the
// segmented combine (gemm_segments.cuh) and the residual norm that reads a projection as its partials (rms_norm.cuh).
#pragma once
#include "common.cuh"

// Element `element` of partials [chunks, elements]: chunk 0's partial, then each later chunk's added in ascending order.
__device__ __forceinline__ float gemm_chunks_total(const float* partials, long long elements, long long element,
                                                   int chunks) {
  float total = partials[element];
  for (int c = 1; c < chunks; c++) total = total + partials[c * elements + element];
  return total;
}
