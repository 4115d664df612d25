// The MoE router (router.cu) and the FP8 quantisation of the MoE input for the gate|up GEMM (quantize_fp8.cu) in one
// launch: they read different tensors and neither needs the other, so warp 0 of a block routes the block's row while
// the block's other warps quantise that row's 128-column blocks. Every output has the bits of router_top_k and of
// quantize_e4m3_rows: the arithmetic is theirs (router.cuh, quantize_fp8.cuh); only which warp does it differs.
//   logits: [rows, experts] bf16; expert_ids: [rows, top_k] int32; expert_weights: [rows, top_k] fp32
//   x: [rows, cols] bf16; q: [rows, cols] uint8 e4m3 bits; scales: [rows, ceil(cols/128)] fp32
// One block per row: warp 0 routes (experts <= 512, top_k <= 32), warps 1 .. W quantise blocks w − 1, w − 1 + W, ...
#include "quantize_fp8.cuh"
#include "router.cuh"

// One routing warp and up to 16 quantising warps (a 2048-wide row has 16 column blocks).
#define ROUTER_QUANTIZE_MAX_THREADS (17 * 32)

// The contract's control (kernels/controls/router_quantize_controls.cu) compiles this file under another name, its
// warps leaving each row's last column block out.
#ifndef ROUTER_QUANTIZE_ENTRY
#define ROUTER_QUANTIZE_ENTRY router_top_k_quantize
#define ROUTER_QUANTIZE_BLOCKS_LEFT_OUT 0
#endif

extern "C" __global__ void __launch_bounds__(ROUTER_QUANTIZE_MAX_THREADS)
    ROUTER_QUANTIZE_ENTRY(int* expert_ids, float* expert_weights, uint8_t* q, float* scales, const bf16* logits,
                          const bf16* x, int rows, int experts, int top_k, int cols) {
  KERNEL_PROLOGUE();
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const int warp = threadIdx.x >> 5;
  if (warp == 0) {
    route_row(expert_ids + row * top_k, expert_weights + row * top_k, logits + row * experts, experts, top_k);
    return;
  }
  const int quantize_warps = (blockDim.x >> 5) - 1;
  const int blocks = (cols + QUANTIZE_BLOCK - 1) / QUANTIZE_BLOCK;
  for (int block = warp - 1; block < blocks - ROUTER_QUANTIZE_BLOCKS_LEFT_OUT; block += quantize_warps) {
    quantize_row_block(q, scales, x, row, block, cols, blocks, E4M3_MAXIMUM);
  }
}
