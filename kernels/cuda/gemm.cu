// Batch-invariant bf16 projection GEMM: y[m, n] = Σ_k x[m, k] · w[n, k], bf16 in, fp32 accumulation on tensor cores
// (mma.sync m16n8k16), one rounding to bf16 at the output (or none: fp32 output, for the logits head).
//   x: [M, K] bf16, K contiguous; w: [N, K] bf16 (the PyTorch Linear layout); y: [M, N] bf16 or fp32
//   partials: fp32 [chunks, M, N] scratch, used only when the launch splits K across blocks (gridDim.z == chunks)
//   counters: int32 [row tiles × column tiles], zero before the first launch and left at zero by every launch; when
//             not null, the last chunk block of a tile adds the partials itself and no gemm_combine is launched
// Requirements (checked by the launcher): K % 8 == 0, x and w 16-byte aligned, y 8-byte aligned. M and N are free.
// Batch invariance: K is cut into chunks whose size the launcher derives from (N, K) alone. For every output element
// each chunk is summed from zero by the same sequence of mma.sync steps (k ascending, 16 at a time), and the chunk
// sums are added in ascending order, either in registers or by gemm_combine from the partials: the same fp32
// additions in the same order. So the bits of a row do not depend on M, on which tile configuration the launcher
// picks for M (gemm_rows16/64/96 differ only in how many rows and columns a block holds), or on whether K is split.
//   gemm_rows16_bf16   16 × 64 block tile, 4 warps, 4 stages: decode (M ≤ 16), K split across blocks
//   gemm_rows16k128_bf16  the same tile staging 128 K elements in 2 stages: decode where K and the chunks allow it
//   gemm_rows64_bf16   64 × 64 block tile, 4 warps, 4 stages: small batches (M ≤ 64), K split across blocks
//   gemm_rows96_bf16   96 × 128 block tile, 12 warps, 3 stages: prefill, K chunks summed in registers; grid.x
//                      walks row tiles (x stays in L2, the weights stream about once)
//   gemm_wg64x128_bf16, gemm_wg64x64_bf16  64 × 128 or 64 × 64 block tiles on wgmma (gemm_wgmma.cuh, sm_90a), one
//                      warpgroup: calls of 17 to 64 rows on a Hopper GPU, K split across blocks
//   gemm_combine       y = Σ_c partials[c] in ascending c, then the one rounding
//   gemm_segments_rows{16,64,96}_bf16, gemm_segments_combine: the same for up to four GEMMs sharing x in one launch
//                      (gemm_segments.cuh), each with the bits of its own launch
// Programmatic dependent launch: the first weight stages are requested before griddepcontrol.wait; x is read and
// y written only after it.
#include "gemm_segments.cuh"

extern "C" __global__ void __launch_bounds__(128, 4)
    gemm_rows16_bf16(void* y, const bf16* x, const bf16* w, float* partials, int* counters, int M, int N, int K,
                     int chunk_tiles, int output_fp32) {
  allow_dependent_launch();
  gemm_tiles<16, 64, 1, 4, 4, false, false>(y, x, w, partials, counters, M, N, K, chunk_tiles, output_fp32,
                                               gemm_grid_block<false>(chunk_tiles));
}

extern "C" __global__ void __launch_bounds__(128, 3)
    gemm_rows64_bf16(void* y, const bf16* x, const bf16* w, float* partials, int* counters, int M, int N, int K,
                     int chunk_tiles, int output_fp32) {
  allow_dependent_launch();
  gemm_tiles<64, 64, 1, 4, 4, false, false>(y, x, w, partials, counters, M, N, K, chunk_tiles, output_fp32,
                                               gemm_grid_block<false>(chunk_tiles));
}

extern "C" __global__ void __launch_bounds__(384, 1)
    gemm_rows96_bf16(void* y, const bf16* x, const bf16* w, float* partials, int* counters, int M, int N, int K,
                     int chunk_tiles, int output_fp32) {
  allow_dependent_launch();
  gemm_tiles<96, 128, 3, 4, 3, true, false>(y, x, w, partials, counters, M, N, K, chunk_tiles, output_fp32,
                                               gemm_grid_block<true>(chunk_tiles));
}

// rows16 staging 128 K elements a tile in 2 stages: each weight row is read 256 contiguous bytes a request instead of
// 128, which the H200 serves faster at one row (bench/gpu-gemm-decode.ts). The same chunks and mma steps, so the
// same bits; the launcher picks it where K and every chunk are whole 128-element tiles, else gemm_rows16_bf16.
extern "C" __global__ void __launch_bounds__(128, 4)
    gemm_rows16k128_bf16(void* y, const bf16* x, const bf16* w, float* partials, int* counters, int M, int N, int K,
                         int chunk_tiles, int output_fp32) {
  allow_dependent_launch();
  gemm_tiles<16, 64, 1, 4, 2, false, false, 128>(y, x, w, partials, counters, M, N, K, chunk_tiles, output_fp32,
                                                 gemm_grid_block<false>(chunk_tiles));
}

extern "C" __global__ void __launch_bounds__(128, 4) gemm_segments_rows16k128_bf16(GEMM_SEGMENT_PARAMETERS) {
  allow_dependent_launch();
  gemm_segments_tiles<16, 64, 1, 4, 2, false, false, 128>(x, GEMM_SEGMENT_TABLE);
}

// The wgmma tiles (gemm_wgmma.cuh) for calls of 17 to 64 rows: 64 × 128 (2 stages) or 64 × 64 (3 stages) blocks,
// two 64-element K tiles a stage, every chunk split across blocks.
extern "C" __global__ void __launch_bounds__(128, 2)
    gemm_wg64x128_bf16(void* y, const bf16* x, const bf16* w, float* partials, int* counters, int M, int N, int K,
                       int chunk_tiles, int output_fp32) {
  allow_dependent_launch();
  gemm_tiles_wgmma<128, 2, 2>(y, x, w, partials, counters, M, N, K, chunk_tiles, output_fp32,
                              gemm_grid_block<false>(chunk_tiles));
}

extern "C" __global__ void __launch_bounds__(128, 2)
    gemm_wg64x64_bf16(void* y, const bf16* x, const bf16* w, float* partials, int* counters, int M, int N, int K,
                      int chunk_tiles, int output_fp32) {
  allow_dependent_launch();
  gemm_tiles_wgmma<64, 3, 2>(y, x, w, partials, counters, M, N, K, chunk_tiles, output_fp32,
                             gemm_grid_block<false>(chunk_tiles));
}

extern "C" __global__ void __launch_bounds__(128, 2) gemm_segments_wg64x128_bf16(GEMM_SEGMENT_PARAMETERS) {
  allow_dependent_launch();
  gemm_segments_tiles_wgmma<128, 2, 2>(x, GEMM_SEGMENT_TABLE);
}

extern "C" __global__ void __launch_bounds__(128, 2) gemm_segments_wg64x64_bf16(GEMM_SEGMENT_PARAMETERS) {
  allow_dependent_launch();
  gemm_segments_tiles_wgmma<64, 3, 2>(x, GEMM_SEGMENT_TABLE);
}

// One thread per output element: the chunk partials in ascending order, exactly as the tile loop adds them.
extern "C" __global__ void gemm_combine(void* y, const float* partials, int M, int N, int chunks, int output_fp32) {
  KERNEL_PROLOGUE();
  const long long elements = (long long)M * N;
  for (long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x; index < elements;
       index += (long long)gridDim.x * blockDim.x) {
    const float total = chunk_partials_total(partials + index, elements, chunks);
    if (output_fp32) {
      static_cast<float*>(y)[index] = total;
    } else {
      static_cast<bf16*>(y)[index] = to_bf16(total);
    }
  }
}

extern "C" __global__ void __launch_bounds__(128, 4) gemm_segments_rows16_bf16(GEMM_SEGMENT_PARAMETERS) {
  allow_dependent_launch();
  gemm_segments_tiles<16, 64, 1, 4, 4, false, false>(x, GEMM_SEGMENT_TABLE);
}

extern "C" __global__ void __launch_bounds__(128, 3) gemm_segments_rows64_bf16(GEMM_SEGMENT_PARAMETERS) {
  allow_dependent_launch();
  gemm_segments_tiles<64, 64, 1, 4, 4, false, false>(x, GEMM_SEGMENT_TABLE);
}

extern "C" __global__ void __launch_bounds__(384, 1) gemm_segments_rows96_bf16(GEMM_SEGMENT_PARAMETERS) {
  allow_dependent_launch();
  gemm_segments_tiles<96, 128, 3, 4, 3, true, false>(x, GEMM_SEGMENT_TABLE);
}

// The split segments' partials, all segments in one launch (x and the weights are not read).
extern "C" __global__ void gemm_segments_combine(GEMM_SEGMENT_PARAMETERS) {
  KERNEL_PROLOGUE();
  gemm_segments_add_partials(GEMM_SEGMENT_TABLE);
}
