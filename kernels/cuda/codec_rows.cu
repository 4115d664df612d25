// The codec's row kernels besides its convs (MODEL.md §6): the ConvNeXt block's causal depthwise conv and LayerNorm,
// and the quantizer's code lookup. Activations are fp32 rows [T, C], C contiguous. The depthwise conv takes the
// codec's sequence table int32 [Q, 4] = (slot, firstRow, rowCount, startPosition) in frames, scaled by `row_scale`
// rows per frame (codec_conv.cu), and reads each lane's carried rows from a slab by slot.
//
// codec_depthwise_conv: out[t, c] = bias[c] + Σ_tap w[c, tap] · in[t − (K − 1) + tap, c], in = history ++ x
//   weight: [C, K] (PyTorch's [C, 1, K]); history: [S, K − 1, C], read only (codec_history_update carries it)
// codec_layer_norm: out = (x − mean) / sqrt(var + eps) · w + b per row of `width`, biased variance; x, out [rows,
//   width], out must not alias x
// codec_quantizer_decode: codes int32 [F, K] (code 0 semantic) → out [F, latent]; each code clamped to its codebook;
//   projected_k = bias_k + Σ_d w_k[c, d] · entry_k[d]; out = projected_0 + (projected_1 + projected_2 + ...)
//   semantic entries [semanticSize, dim], residual entries [K − 1, residualSize, dim], out weights [K, latent, dim],
//   out biases [K, latent]
// Each output's reduction order depends on the sizes only: never on the rows of the call, its chunk or other lanes.
#include "codec_rows.cuh"

CODEC_DEPTHWISE_ENTRY(codec_depthwise_conv, CODEC_ROWS_FAULT_NONE)
CODEC_LAYER_NORM_ENTRY(codec_layer_norm, CODEC_ROWS_FAULT_NONE)
CODEC_QUANTIZER_ENTRY(codec_quantizer_decode, CODEC_ROWS_FAULT_NONE)
