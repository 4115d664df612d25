// The codec quantizer's encode (MODEL.md §6): latent rows → codes, as Quantizer.encode (src/codec/quantizer.ts) does
// it, bit for bit. Latents are fp32 rows [F, latent]; codes int32 [F, K] (code 0 semantic), margins fp64 [F, K].
//
// codec_quantizer_encode: one block per frame; the residual starts as the frame's row. Per codebook k in order:
//   z_e = in_bias_k + in_w_k · residual (fp64 from the bias, channels ascending, rounded to fp32);
//   u = z_e / max(fround(‖z_e‖), 1e-12); distance_j = (u·u − 2·u·n_j) + ‖n_j‖² in fp64 over the normalised
//   entries n_j; code = the first smallest distance, margin = second smallest − smallest; straight-through
//   s = z_e + fround(entry − z_e); residual −= fround(out_bias_k + out_w_k · s) (fp64 from the bias, dims
//   ascending).
//   in weights [K, dim, latent], in biases [K, dim], entries and normalised entries [S + (K − 1)·R, dim] (semantic
//   first, then each residual codebook), squared norms of the normalised entries fp64 [S + (K − 1)·R], out weights
//   [K, latent, dim], out biases [K, latent]. Dynamic shared memory: (latent + 3·dim) floats.
// A frame's codes depend on its row and the weights alone: never on the frames of the call.
#include "codec_quantize.cuh"

CODEC_QUANTIZER_ENCODE_ENTRY(codec_quantizer_encode, CODEC_QUANTIZE_FAULT_NONE)
