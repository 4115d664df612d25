// Deliberately wrong codec transformer kernels for the kernel contract's controls (test/kernels/): the real kernels'
// code (kernels/cuda/codec_transformer.cuh) with one planted fault each. Never launched by the backend.
//   control_codec_attention_window_short            attends window − 1 positions, not window      (accuracy gates)
//   control_codec_ring_update_slot_off              writes each kept row one ring slot further     (accuracy gates)
//   control_codec_rope_position_behind              turns each row by position − 1                 (accuracy gates)
//   control_codec_attention_keys_reversed_with_lanes sums the keys last to first in calls of several lanes
//                                                   (accurate; only the equivalence gate can see it)
#include "codec_window_attention.cuh"

CODEC_ATTENTION_ENTRY(control_codec_attention_window_short, TRANSFORMER_FAULT_WINDOW_SHORT)
CODEC_RING_ENTRY(control_codec_ring_update_slot_off, TRANSFORMER_FAULT_RING_SLOT_OFF)
CODEC_ROPE_ENTRY(control_codec_rope_position_behind, TRANSFORMER_FAULT_ROPE_POSITION_BEHIND)
CODEC_ATTENTION_ENTRY(control_codec_attention_keys_reversed_with_lanes, TRANSFORMER_FAULT_KEYS_REVERSED_WITH_LANES)
