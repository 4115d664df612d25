// Gated DeltaNet decode: the input projection's split-K combine with the conv + SiLU and the gates in one launch
// (delta_net_combine.cuh says what it computes and why the bits are those of the three launches it replaces).
//   GEMM_SEGMENT_PARAMETERS: the segmented launch's own (segments q|k|v [M, C], z, b [M, Vh], a [M, Vh]; q|k|v split)
//   convolved: [M, C] bf16; conv_weight: [C, 4] bf16; conv_state: [S, 3, C] bf16, the last 3 inputs, oldest first
//   sequences: [M, 4] int32 (slot, firstRow, rowCount = 1, startPosition); g, beta: [M, Vh] fp32
//   a_log, dt_bias: [Vh] fp32 (delta_net_combine_bf16) or bf16 (delta_net_combine_bf16_parameters), as stored
#include "delta_net_combine.cuh"

DELTA_NET_COMBINE_KERNEL(delta_net_combine_bf16, float, COMBINE_FAULT_NONE)
DELTA_NET_COMBINE_KERNEL(delta_net_combine_bf16_parameters, bf16, COMBINE_FAULT_NONE)
