// Deliberately wrong GEMM for the kernel contract's batch-invariance gate: gemm_rows16_bf16's signature and geometry,
// but with more than one row it walks the four 16-wide steps of every K tile in reverse. Accurate (the accuracy gate
// passes), repeatable, yet a row's bits change with the row count: only the invariance gate can catch it.
#include "gemm_segments.cuh"

extern "C" __global__ void __launch_bounds__(128, 4)
    control_gemm_k_reversed_with_rows(void* y, const bf16* x, const bf16* w, float* partials, int* counters, int M,
                                      int N, int K, int chunk_tiles, int output_fp32) {
  allow_dependent_launch();
  gemm_tiles<16, 64, 1, 4, 4, false, true>(y, x, w, partials, counters, M, N, K, chunk_tiles, output_fp32,
                                           gemm_grid_block<false>(chunk_tiles));
}

// Deliberately wrong segmented GEMM for the contract's fused-against-separate equivalence: gemm_segments_rows16_bf16's
// signature and geometry, but every segment closes its register sums at segment 0's chunk size, as one K chunking
// shared by all segments would. Accurate, repeatable and fully written: only a comparison of bits catches it (each
// segment against its own launch, where its chunking differs from segment 0's).
extern "C" __global__ void __launch_bounds__(128, 4) control_gemm_segments_shared_chunking(GEMM_SEGMENT_PARAMETERS) {
  allow_dependent_launch();
  gemm_segments_tiles<16, 64, 1, 4, 4, false, true>(x, GEMM_SEGMENT_TABLE);
}
