// A deliberately wrong fused router + quantiser for the kernel contract: router_top_k_quantize
// (kernels/cuda/router_quantize.cu) compiled under the control's name with its quantising warps stopping one column
// block short (an off-by-one in their block loop), so each row's last 128 columns and their scale are never written.
// The written and exact gates must catch it; its argument layout is the real kernel's.
#define ROUTER_QUANTIZE_ENTRY control_router_quantize_skips_last_block
#define ROUTER_QUANTIZE_BLOCKS_LEFT_OUT 1
#include "router_quantize.cu"
