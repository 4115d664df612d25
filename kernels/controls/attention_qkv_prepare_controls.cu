// The fused q|k|v combine + prepare compiled with a deliberate fault for the kernel contract: the norm's squares are
// summed by every thread of the block instead of in the prepare kernel's mapping, so q and K differ from the two
// launches' in their last bits. The contract's equivalence with the two launches must catch it.
#include "attention_qkv_prepare.cuh"

ATTENTION_QKV_PREPARE_KERNEL(control_attention_qkv_prepare_squares_block_wide, QKV_FAULT_SQUARES_BLOCK_WIDE)
