// Deliberately wrong fused router + quantiser + grouping kernels for the kernel contract: router_top_k_quantize
// (kernels/cuda/router_quantize.cu) compiled under each control's name with one planted fault, so each argument
// layout is the real kernel's. Never launched by the backend.
//   control_router_quantize_skips_last_block  the quantising warps stop one column block short (an off-by-one in their
//                                             block loop): each row's last 128 columns and their scale are never
//                                             written                                   (written and exact gates)
//   control_router_group_counter_kept         the last block to arrive groups but never resets the arrival counter,
//                                             so the next launch (a repeat, a graph replay) groups nothing and its
//                                             tables keep the poison                   (repeat and graph gates)
//   control_router_one_row_offsets_inclusive  a launch of one row, grouped by its routing warp, counts each expert
//                                             itself into its own offset                (the one-row shape's tables)
#define ROUTER_QUANTIZE_ENTRY control_router_quantize_skips_last_block
#define ROUTER_QUANTIZE_BLOCKS_LEFT_OUT 1
#define ROUTER_QUANTIZE_GROUPING_FAULT FAULT_NONE
#include "router_quantize.cu"

#undef ROUTER_QUANTIZE_ENTRY
#undef ROUTER_QUANTIZE_BLOCKS_LEFT_OUT
#undef ROUTER_QUANTIZE_GROUPING_FAULT
#define ROUTER_QUANTIZE_ENTRY control_router_group_counter_kept
#define ROUTER_QUANTIZE_BLOCKS_LEFT_OUT 0
#define ROUTER_QUANTIZE_GROUPING_FAULT FAULT_COUNTER_KEPT
#include "router_quantize.cu"

#undef ROUTER_QUANTIZE_ENTRY
#undef ROUTER_QUANTIZE_BLOCKS_LEFT_OUT
#undef ROUTER_QUANTIZE_GROUPING_FAULT
#define ROUTER_QUANTIZE_ENTRY control_router_one_row_offsets_inclusive
#define ROUTER_QUANTIZE_BLOCKS_LEFT_OUT 0
#define ROUTER_QUANTIZE_GROUPING_FAULT FAULT_ONE_ROW_OFFSETS_INCLUSIVE
#include "router_quantize.cu"
