// Loads a Gated DeltaNet block's weights (transformers qwen3_5_moe names): projections, the depthwise conv
// [C, 1, K] (kept as [C, K]), A_log and dt_bias per value head, and the plain-weight gated output norm.
import type { DeltaNetWeights } from '../../backend/types.ts';
import type { TextConfig } from '../config.ts';
import type { TensorSource } from '../tensor-source.ts';
import type { LinearAttentionNames } from '../weights.ts';

export async function loadDeltaNet<B>(
  source: TensorSource<B>,
  names: LinearAttentionNames,
  text: TextConfig,
): Promise<DeltaNetWeights<B>> {
  const hidden = text.hiddenSize;
  const channels = text.linearConvChannels;
  const kernel = text.linearConvKernel;
  const conv = await source.float32(names.conv1d, [channels, 1, kernel]);
  return {
    inProjQkv: await source.linear(names.inProjQkv, channels, hidden),
    inProjZ: await source.linear(names.inProjZ, text.linearValueDim, hidden),
    inProjB: await source.linear(names.inProjB, text.linearValueHeads, hidden),
    inProjA: await source.linear(names.inProjA, text.linearValueHeads, hidden),
    outProj: await source.linear(names.outProj, hidden, text.linearValueDim),
    conv: source.backend.fromHost(conv),
    aLog: await source.vector(names.aLog, [text.linearValueHeads]),
    dtBias: await source.vector(names.dtBias, [text.linearValueHeads]),
    norm: await source.vector(names.norm, [text.linearValueHeadDim]),
    keyHeads: text.linearKeyHeads,
    valueHeads: text.linearValueHeads,
    keyDim: text.linearKeyHeadDim,
    valueDim: text.linearValueHeadDim,
    convKernel: kernel,
    eps: text.rmsNormEps,
  };
}
