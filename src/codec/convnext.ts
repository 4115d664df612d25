// Quantizer resampling stages: a causal conv (k = s = factor) or transposed conv (k = s) followed by a ConvNeXt block
// x + γ · pw2(gelu(pw1(layerNorm(dwconv7(x))))) with a causal depthwise conv. Activations channels-first [C, T].
import { CausalConv, CausalTransposedConv } from './conv.ts';
import { geluInPlace, layerNorm, linear, transpose } from './rows.ts';
import type { ScratchArena } from './scratch.ts';
import { type CodecWeights, weight } from './weights.ts';

export const LAYER_NORM_EPS = 1e-6;
export const DEPTHWISE_KERNEL = 7;

class ConvNeXtBlock {
  private readonly depthwise: CausalConv;
  private readonly normWeight: Float32Array;
  private readonly normBias: Float32Array;
  private readonly pointwise1: Float32Array;
  private readonly pointwise1Bias: Float32Array;
  private readonly pointwise2: Float32Array;
  private readonly pointwise2Bias: Float32Array;
  private readonly gamma: Float32Array;

  constructor(
    weights: CodecWeights,
    prefix: string,
    private readonly channels: number,
    private readonly hidden: number,
  ) {
    this.depthwise = new CausalConv(
      { inputs: channels, outputs: channels, kernel: DEPTHWISE_KERNEL, depthwise: true },
      weight(weights, `${prefix}.dwconv.conv.weight`),
      weight(weights, `${prefix}.dwconv.conv.bias`),
    );
    this.normWeight = weight(weights, `${prefix}.norm.weight`);
    this.normBias = weight(weights, `${prefix}.norm.bias`);
    this.pointwise1 = weight(weights, `${prefix}.pwconv1.weight`);
    this.pointwise1Bias = weight(weights, `${prefix}.pwconv1.bias`);
    this.pointwise2 = weight(weights, `${prefix}.pwconv2.weight`);
    this.pointwise2Bias = weight(weights, `${prefix}.pwconv2.bias`);
    this.gamma = weight(weights, `${prefix}.gamma`);
  }

  forward(x: Float32Array, rows: number, scratch: ScratchArena): Float32Array {
    const { channels, hidden } = this;
    const mixed = transpose(this.depthwise.forward(x, rows, scratch), channels, rows, scratch);
    const normed = layerNorm(mixed, rows, channels, this.normWeight, this.normBias, LAYER_NORM_EPS, scratch);
    const expanded = linear(normed, rows, channels, hidden, this.pointwise1, this.pointwise1Bias, scratch);
    geluInPlace(expanded);
    const projected = linear(expanded, rows, hidden, channels, this.pointwise2, this.pointwise2Bias, scratch);
    const out = scratch.take(channels * rows);
    for (let channel = 0; channel < channels; channel++) {
      const gamma = this.gamma[channel]!;
      for (let row = 0; row < rows; row++) {
        out[channel * rows + row] =
          x[channel * rows + row]! + Math.fround(gamma * projected[row * channels + channel]!);
      }
    }
    return out;
  }
}

/**
 * quantizer.downsample.N: causal conv k = s = factor, then ConvNeXt: [C, T] → [C, T / factor].
 * quantizer.upsample.N: transposed conv k = s = factor, then ConvNeXt: [C, T] → [C, T · factor].
 */
export class ResampleStage {
  private readonly conv: CausalConv | CausalTransposedConv;
  private readonly block: ConvNeXtBlock;

  constructor(
    weights: CodecWeights,
    private readonly direction: 'downsample' | 'upsample',
    index: number,
    channels: number,
    private readonly factor: number,
    hidden: number,
  ) {
    const prefix = `quantizer.${direction}.${index}`;
    const convWeight = weight(weights, `${prefix}.0.conv.weight`);
    const convBias = weight(weights, `${prefix}.0.conv.bias`);
    this.conv =
      direction === 'downsample'
        ? new CausalConv({ inputs: channels, outputs: channels, kernel: factor, stride: factor }, convWeight, convBias)
        : new CausalTransposedConv(channels, channels, factor, factor, convWeight, convBias);
    this.block = new ConvNeXtBlock(weights, `${prefix}.1`, channels, hidden);
  }

  forward(x: Float32Array, rows: number, scratch: ScratchArena): Float32Array {
    const resampled = this.conv.forward(x, rows, scratch);
    const resampledRows = this.direction === 'downsample' ? rows / this.factor : rows * this.factor;
    return this.block.forward(resampled, resampledRows, scratch);
  }
}
