// Deliberately wrong codec convolution kernels for the kernel contract's controls (test/kernels/): the real kernels'
// code (kernels/cuda/codec_conv.cuh) with one planted fault each. Never launched by the backend.
//   control_codec_conv_taps_reversed              each input channel's weights meet the taps flipped (accuracy gates)
//   control_codec_conv_history_off_by_one         the carried rows read one row further back       (accuracy gates)
//   control_codec_conv_chunks_reversed_with_lanes the chunks added last to first in calls of several lanes
//                                                 (accurate; only the invariance gate can see it)
//   control_codec_transposed_history_off_by_one   the transposed conv's carried row read one row too far back
//   control_codec_history_update_off_by_one       the kept history is shifted one row back         (chunked ≠ whole)
//   control_codec_snake_unsquared                 Snake adds sin(αx)/α instead of sin²(αx)/α
//   control_codec_conv_narrow_taps_reversed       the narrow conv applies each channel's kernel flipped
//   control_codec_conv_narrow_history_off_by_one  the narrow conv's carried rows read one row further back
//   control_codec_conv_tiled_*, control_codec_transposed_tiled_history_off_by_one: the same faults in the
//                                                 register-tiled kernels (kernels/cuda/codec_conv_tiled.cuh)
//   control_codec_conv_mma_*                      the same faults in the tensor-core conv (codec_conv_mma.cuh)
//   control_codec_conv_mma_staged_*              the staged tensor-core conv: every input row copied one row further
//                                                 back; its groups reversed beside other lanes
//   control_codec_conv_stage_snake_unsquared      the staging of a layer's inputs applies the unsquared Snake
//                                                 (staged ≠ staged in the conv)
//   control_codec_conv_combine_reversed           after group 0, the split groups' sums added last to first
//                                                 (accurate; split ≠ unsplit)
#include "codec_conv_mma.cuh"

CODEC_CONV_ENTRY(control_codec_conv_taps_reversed, float, CODEC_FAULT_TAPS_REVERSED)
CODEC_CONV_ENTRY(control_codec_conv_history_off_by_one, float, CODEC_FAULT_HISTORY_OFF_BY_ONE)
CODEC_CONV_ENTRY(control_codec_conv_chunks_reversed_with_lanes, float, CODEC_FAULT_CHUNKS_REVERSED_WITH_LANES)
CODEC_TRANSPOSED_ENTRY(control_codec_transposed_history_off_by_one, float, CODEC_FAULT_TRANSPOSED_HISTORY_OFF_BY_ONE)
CODEC_HISTORY_ENTRY(control_codec_history_update_off_by_one, CODEC_FAULT_UPDATE_OFF_BY_ONE)
CODEC_SNAKE_ENTRY(control_codec_snake_unsquared, CODEC_FAULT_SNAKE_UNSQUARED)
CODEC_NARROW_ENTRY(control_codec_conv_narrow_taps_reversed, float, CODEC_FAULT_TAPS_REVERSED)
CODEC_NARROW_ENTRY(control_codec_conv_narrow_history_off_by_one, float, CODEC_FAULT_HISTORY_OFF_BY_ONE)
CODEC_TILED_ENTRY(control_codec_conv_tiled_taps_reversed, float, CODEC_FAULT_TAPS_REVERSED)
CODEC_TILED_ENTRY(control_codec_conv_tiled_history_off_by_one, float, CODEC_FAULT_HISTORY_OFF_BY_ONE)
CODEC_TILED_ENTRY(control_codec_conv_tiled_chunks_reversed_with_lanes, float, CODEC_FAULT_CHUNKS_REVERSED_WITH_LANES)
CODEC_TILED_TRANSPOSED_ENTRY(control_codec_transposed_tiled_history_off_by_one, float,
                             CODEC_FAULT_TRANSPOSED_HISTORY_OFF_BY_ONE)
CODEC_MMA_ENTRY(control_codec_conv_mma_taps_reversed, CODEC_FAULT_TAPS_REVERSED, false, false)
CODEC_MMA_ENTRY(control_codec_conv_mma_history_off_by_one, CODEC_FAULT_HISTORY_OFF_BY_ONE, false, false)
CODEC_MMA_ENTRY(control_codec_conv_mma_groups_reversed_with_lanes, CODEC_FAULT_CHUNKS_REVERSED_WITH_LANES, false,
                false)
CODEC_MMA_ENTRY(control_codec_conv_mma_staged_history_off_by_one, CODEC_FAULT_HISTORY_OFF_BY_ONE, false, true)
CODEC_MMA_ENTRY(control_codec_conv_mma_staged_groups_reversed_with_lanes, CODEC_FAULT_CHUNKS_REVERSED_WITH_LANES,
                false, true)
CODEC_STAGE_ENTRY(control_codec_conv_stage_snake_unsquared, CODEC_FAULT_SNAKE_UNSQUARED)
CODEC_MMA_COMBINE_ENTRY(control_codec_conv_combine_reversed, CODEC_FAULT_CHUNKS_REVERSED_WITH_LANES)
