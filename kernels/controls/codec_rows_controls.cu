// Deliberately wrong codec row kernels for the kernel contract's controls (test/kernels/): the real kernels' code
// (kernels/cuda/codec_rows.cuh) with one planted fault each. Never launched by the backend.
//   control_codec_depthwise_taps_reversed          each channel's kernel applied flipped             (accuracy gates)
//   control_codec_depthwise_history_off_by_one     the carried rows read one row further back        (accuracy gates)
//   control_codec_layer_norm_unbiased              the variance divided by width − 1                 (accuracy gates)
//   control_codec_quantizer_semantic_first         semantic + residual_1 + ... instead of semantic + (residual sum)
#include "codec_rows.cuh"

CODEC_DEPTHWISE_ENTRY(control_codec_depthwise_taps_reversed, CODEC_ROWS_FAULT_DEPTHWISE_TAPS_REVERSED)
CODEC_DEPTHWISE_ENTRY(control_codec_depthwise_history_off_by_one, CODEC_ROWS_FAULT_DEPTHWISE_HISTORY_OFF_BY_ONE)
CODEC_LAYER_NORM_ENTRY(control_codec_layer_norm_unbiased, CODEC_ROWS_FAULT_LAYER_NORM_UNBIASED)
CODEC_QUANTIZER_ENTRY(control_codec_quantizer_semantic_first, CODEC_ROWS_FAULT_QUANTIZER_SEMANTIC_FIRST)
