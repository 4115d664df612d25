// A deliberately wrong fused MoE combine + residual add + norm for the kernel contract: moe_combine_add_rms_norm_bf16's
// body, but the norm reads each element's fp32 sum before its rounding to bf16 (x is still stored rounded). Accurate,
// fully written, repeatable and the same at every row count: the byte-for-byte comparison with moe_combine then
// add_rms_norm_bf16 catches it (the ulps gate, whose reference norms the stored x, may catch it first).
#include "moe_combine_norm.cuh"

MOE_COMBINE_NORM_KERNEL(control_moe_combine_norm_unrounded_sum, bf16, true)
