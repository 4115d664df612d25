// Deliberately wrong codec quantizer encodes for the kernel contract's controls (test/kernels/): the real kernel's
// code (kernels/cuda/codec_quantize.cuh) with one planted fault each. Never launched by the backend.
//   control_codec_quantizer_encode_ties_last       an exact tie goes to the later entry             (code gates)
//   control_codec_quantizer_encode_residual_kept   the residual is never reduced by a codebook      (code gates)
#include "codec_quantize.cuh"

CODEC_QUANTIZER_ENCODE_ENTRY(control_codec_quantizer_encode_ties_last, CODEC_QUANTIZE_FAULT_TIES_LAST)
CODEC_QUANTIZER_ENCODE_ENTRY(control_codec_quantizer_encode_residual_kept, CODEC_QUANTIZE_FAULT_RESIDUAL_KEPT)
