// The fused q|k|v combine + prepare compiled with a deliberate fault for the kernel contract: a gated query head is
// normed and rotated from its gate half, the columns the projection lays out after its query half. The contract's
// accuracy against the reference and its equivalence with the two launches must catch it.
#include "attention_qkv_prepare.cuh"

ATTENTION_QKV_PREPARE_KERNEL(control_attention_qkv_prepare_gate_as_query, QKV_FAULT_GATE_AS_QUERY)
