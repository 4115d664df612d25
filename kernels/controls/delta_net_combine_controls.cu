// A deliberately wrong DeltaNet combine for the kernel contract: delta_net_combine_bf16's body, but the conv reads
// q|k|v's fp32 total where the separate launches read its bf16 store (the store itself and the carried history are
// right). Within the conv's accuracy bounds at most elements, repeatable, fully written and the same at every lane
// count: the byte-for-byte comparison with gemm_segments_combine, delta_net_conv_silu_bf16 and the gates must catch
// it. Both parameter dtypes, as the real entries (the case names the bf16 one by the suffix).
#include "delta_net_combine.cuh"

DELTA_NET_COMBINE_KERNEL(control_delta_net_combine_conv_input_unrounded, float, COMBINE_FAULT_CONV_INPUT_UNROUNDED)
DELTA_NET_COMBINE_KERNEL(control_delta_net_combine_conv_input_unrounded_bf16_parameters, bf16,
                         COMBINE_FAULT_CONV_INPUT_UNROUNDED)
