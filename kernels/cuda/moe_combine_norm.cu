// The MoE block's combine with the residual add and the zero-centred norm after it, in one launch (one dependent
// stage, not two): per row, x = bf16(x + moe_combine(row)) written back, then out = norm(x) from the rounded x, the
// bits of moe_combine then add_rms_norm_bf16 (moe_combine_norm.cuh says how). Weight bf16, or fp32 as stored.
#include "moe_combine_norm.cuh"

MOE_COMBINE_NORM_KERNEL(moe_combine_add_rms_norm_bf16, bf16, false)
MOE_COMBINE_NORM_KERNEL(moe_combine_add_rms_norm_f32_weight_bf16, float, false)
