// The attention's q|k|v projection's split-K combine and its prepare in one launch (attention_qkv_prepare.cuh says
// what it computes and why its bits are those of gemm_segments_combine followed by attention_prepare_bf16).
#include "attention_qkv_prepare.cuh"

ATTENTION_QKV_PREPARE_KERNEL(attention_qkv_prepare_bf16, QKV_FAULT_NONE)
