// Multiply-add work of the codec decode per frame (MODEL.md §6), counted as 2 FLOP per multiply-add from the config:
// the post-module's linears and windowed attention (a full window), the upsample stages' transposed convs and
// ConvNeXt blocks, the DAC decoder's convs and transposed convs (a transposed conv's output row meets K/s taps).
// Element-wise work (Snake, norms, GELU) is left out: it is a few FLOP per element, small beside the convs.
import { RESIDUAL_DILATIONS } from './blocks.ts';
import type { CodecConfig } from './config.ts';
import { DEPTHWISE_KERNEL } from './convnext.ts';

const DECODER_KERNEL = 7;

export interface DecodeFlops {
  readonly postModule: number;
  readonly upsample: number;
  readonly decoder: number;
  readonly total: number;
}

export function decodeFlopsPerFrame(config: CodecConfig): DecodeFlops {
  const post = config.postModule;
  const width = post.heads * post.headDim;
  const linears =
    post.dim * 3 * width + width * post.dim + post.dim * 2 * post.intermediate + post.intermediate * post.dim;
  const attention = 2 * post.window * width;
  const postModule = 2 * post.layers * (linears + attention);
  let rows = 1;
  let upsample = 0;
  const latent = config.latentDim;
  for (const factor of [...config.quantizerFactors].reverse()) {
    rows *= factor;
    const convNext = DEPTHWISE_KERNEL * latent + 2 * latent * config.convNextHidden;
    upsample += 2 * rows * (latent * latent + convNext);
  }
  let decoder = 2 * rows * latent * config.decoderDim * DECODER_KERNEL;
  let channels = config.decoderDim;
  for (const rate of config.decoderRates) {
    rows *= rate;
    const outputs = channels / 2;
    const transposed = channels * outputs * 2;
    const units = RESIDUAL_DILATIONS.length * (outputs * outputs * DECODER_KERNEL + outputs * outputs);
    decoder += 2 * rows * (transposed + units);
    channels = outputs;
  }
  decoder += 2 * rows * channels * DECODER_KERNEL;
  return { postModule, upsample, decoder, total: postModule + upsample + decoder };
}
