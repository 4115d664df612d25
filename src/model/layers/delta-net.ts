// Loads a Gated DeltaNet block's weights (transformers qwen3_5_moe names): projections, the depthwise conv
// [C, 1, W], A_log and dt_bias per value head, and the plain-weight gated output norm. Shapes come from the weight map.
import type { DeltaNetWeights } from '../../backend/types.ts';
import type { TextConfig } from '../config.ts';
import type { WeightSource } from '../tensor-source.ts';
import type { LinearAttentionNames } from '../weights.ts';

export async function loadDeltaNet<B>(
  source: WeightSource<B>,
  names: LinearAttentionNames,
  text: TextConfig,
): Promise<DeltaNetWeights<B>> {
  return {
    inProjQkv: await source.linear(names.inProjQkv),
    inProjZ: await source.linear(names.inProjZ),
    inProjB: await source.linear(names.inProjB),
    inProjA: await source.linear(names.inProjA),
    outProj: await source.linear(names.outProj),
    conv: await source.tensor(names.conv1d),
    aLog: await source.tensor(names.aLog),
    dtBias: await source.tensor(names.dtBias),
    norm: await source.tensor(names.norm),
    keyHeads: text.linearKeyHeads,
    valueHeads: text.linearValueHeads,
    keyDim: text.linearKeyHeadDim,
    valueDim: text.linearValueHeadDim,
    convKernel: text.linearConvKernel,
    eps: text.rmsNormEps,
  };
}
