// Frames → 44.1 kHz PCM as one streaming pipeline: quantizer lookup → post-module transformer → upsample stages →
// DAC decoder (conv k7, blocks of Snake + transposed conv k=2·rate + 3 residual units, Snake, conv k7, tanh).
// Every stateful stage keeps its own left context, so pushing frames in any chunking yields the same samples.
// Stage outputs are channels-first [C, T] and carry the oracle's names (decode.z, decode.post_module, ...).
import type { Frame } from '../model/types.ts';
import {
  type CodecLayer,
  type CodecStage,
  codecStage,
  convFrom,
  RESIDUAL_DILATIONS,
  residualUnitFrom,
  type StageObserver,
  snakeFrom,
} from './blocks.ts';
import type { CodecConfig } from './config.ts';
import { CausalTransposedConv } from './conv.ts';
import { ResampleStage } from './convnext.ts';
import type { Quantizer } from './quantizer.ts';
import type { ScratchArena } from './scratch.ts';
import { transformerWeights, WindowedTransformer } from './transformer.ts';
import { type CodecWeights, weight } from './weights.ts';

function decoderBlock(weights: CodecWeights, index: number, inputs: number, rate: number): CodecStage {
  const prefix = `decoder.model.${index + 1}.block`;
  const outputs = inputs / 2;
  const snake = snakeFrom(weights, `${prefix}.0`);
  const upsample = new CausalTransposedConv(
    inputs,
    outputs,
    2 * rate,
    rate,
    weight(weights, `${prefix}.1.conv.weight`),
    weight(weights, `${prefix}.1.conv.bias`),
  );
  const units = RESIDUAL_DILATIONS.map((dilation, unit) =>
    residualUnitFrom(weights, `${prefix}.${unit + 2}`, outputs, dilation),
  );
  const block: CodecLayer = {
    forward(x, rows, scratch) {
      let y = upsample.forward(snake.forward(x, rows, scratch), rows, scratch);
      for (const unit of units) y = unit.forward(y, rows * rate, scratch);
      return y;
    },
  };
  return codecStage(`decode.decoder.${index + 1}`, outputs, block, { up: rate });
}

/** The stages after the quantizer lookup, in order, with fresh stream state. */
function decodeStages(weights: CodecWeights, config: CodecConfig): CodecStage[] {
  const latent = config.latentDim;
  const post = new WindowedTransformer(transformerWeights(weights, 'quantizer.post_module', config.postModule));
  const stages = [codecStage('decode.post_module', latent, post)];
  [...config.quantizerFactors].reverse().forEach((factor, index) => {
    const upsample = new ResampleStage(weights, 'upsample', index, latent, factor, config.convNextHidden);
    stages.push(codecStage(`decode.upsample.${index}`, latent, upsample, { up: factor }));
  });
  const first = convFrom(weights, 'decoder.model.0', latent, config.decoderDim, 7);
  stages.push(codecStage('decode.decoder.0', config.decoderDim, first));
  let width = config.decoderDim;
  config.decoderRates.forEach((rate, index) => {
    stages.push(decoderBlock(weights, index, width, rate));
    width /= 2;
  });
  const tail = config.decoderRates.length + 1;
  stages.push(codecStage(`decode.decoder.${tail}`, width, snakeFrom(weights, `decoder.model.${tail}`)));
  const last = convFrom(weights, `decoder.model.${tail + 1}`, width, 1, 7);
  stages.push(codecStage(`decode.decoder.${tail + 1}`, 1, last));
  return stages;
}

/** One decode stream: every stage's carried state plus the scratch its passes reuse. */
export class DecodePipeline {
  private readonly stages: CodecStage[];

  constructor(
    weights: CodecWeights,
    private readonly config: CodecConfig,
    private readonly quantizer: Quantizer,
    private readonly scratch: ScratchArena,
    private readonly observer?: StageObserver,
  ) {
    this.stages = decodeStages(weights, config);
  }

  /** Decodes the next frames; returns exactly their frames.length × frameLength samples (a fresh array). */
  push(frames: readonly Frame[]): Float32Array {
    const samples = new Float32Array(frames.length * this.config.frameLength);
    if (frames.length === 0) return samples;
    const scratch = this.scratch;
    scratch.reset();
    let rows = frames.length;
    let x = scratch.take(this.config.latentDim * rows);
    this.quantizer.decode(frames, x);
    this.observer?.('decode.z', x, this.config.latentDim, rows);
    for (const stage of this.stages) {
      x = stage.forward(x, rows, scratch);
      rows = (rows * stage.up) / stage.down;
      this.observer?.(stage.name, x, stage.channels, rows);
    }
    for (let index = 0; index < samples.length; index++) samples[index] = Math.tanh(x[index]!);
    return samples;
  }
}
