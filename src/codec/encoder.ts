// Reference audio (mono, 44.1 kHz, float32) → frames, in one pass: right-pad to whole frames; causal conv 1→encoderDim
// k7; encoder blocks (3 residual units at half width, Snake, causal conv k=2·stride, the windowed transformer in the
// last block); Snake; conv k3 → latentDim; downsample stages; pre-module transformer; semantic then residual RVQ.
// Activations are channels-first [C, T]; stage outputs carry the oracle's names (encode.encoder.0, ...).
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
import { ResampleStage } from './convnext.ts';
import type { Quantizer } from './quantizer.ts';
import type { ScratchArena } from './scratch.ts';
import { transformerWeights, WindowedTransformer } from './transformer.ts';
import type { CodecWeights } from './weights.ts';

function encodeStages(weights: CodecWeights, config: CodecConfig): CodecStage[] {
  const stages = [
    codecStage('encode.encoder.0', config.encoderDim, convFrom(weights, 'encoder.block.0', 1, config.encoderDim, 7)),
  ];
  let width = config.encoderDim;
  config.encoderStrides.forEach((stride, index) => {
    const half = width;
    width *= 2;
    const prefix = `encoder.block.${index + 1}.block`;
    const units = RESIDUAL_DILATIONS.map((dilation, unit) =>
      residualUnitFrom(weights, `${prefix}.${unit}`, half, dilation),
    );
    const snake = snakeFrom(weights, `${prefix}.3`);
    const down = convFrom(weights, `${prefix}.4`, half, width, 2 * stride, { stride });
    const last = index === config.encoderStrides.length - 1;
    const transformer = last
      ? new WindowedTransformer(transformerWeights(weights, `${prefix}.5`, config.encoderTransformer))
      : undefined;
    const block: CodecLayer = {
      forward(x, rows, scratch) {
        let y = x;
        for (const unit of units) y = unit.forward(y, rows, scratch);
        y = down.forward(snake.forward(y, rows, scratch), rows, scratch);
        return transformer === undefined ? y : transformer.forward(y, rows / stride, scratch);
      },
    };
    stages.push(codecStage(`encode.encoder.${index + 1}`, width, block, { down: stride }));
  });
  const tail = config.encoderStrides.length + 1;
  stages.push(codecStage(`encode.encoder.${tail}`, width, snakeFrom(weights, `encoder.block.${tail}`)));
  const last = convFrom(weights, `encoder.block.${tail + 1}`, width, config.latentDim, 3);
  stages.push(codecStage(`encode.encoder.${tail + 1}`, config.latentDim, last));
  config.quantizerFactors.forEach((factor, index) => {
    const downsample = new ResampleStage(weights, 'downsample', index, config.latentDim, factor, config.convNextHidden);
    stages.push(codecStage(`encode.downsample.${index}`, config.latentDim, downsample, { down: factor }));
  });
  const pre = new WindowedTransformer(transformerWeights(weights, 'quantizer.pre_module', config.preModule));
  stages.push(codecStage('encode.pre_module', config.latentDim, pre));
  return stages;
}

export interface EncodeOptions {
  /** Frames per pass (memory stays bounded for long audio); every chunking gives the same frames. */
  readonly chunkFrames: number;
  /** Receives each named stage output of every pass. */
  readonly observer?: StageObserver;
  /** Receives, per frame and codebook ([F, K]), the distance gap between the nearest and second-nearest entry. */
  readonly margins?: (values: Float64Array) => void;
}

/**
 * Encodes `pcm` (mono 44.1 kHz) into ceil(length / frameLength) frames, `chunkFrames` frames per pass: all stages are
 * causal and keep their left context between passes, so the frames equal those of one whole pass.
 */
export function encodeAudio(
  pcm: Float32Array,
  weights: CodecWeights,
  config: CodecConfig,
  quantizer: Quantizer,
  scratch: ScratchArena,
  options: EncodeOptions,
): Frame[] {
  const frameCount = Math.ceil(pcm.length / config.frameLength);
  const stages = encodeStages(weights, config);
  const frames: Frame[] = [];
  const gaps = options.margins === undefined ? undefined : new Float64Array(frameCount * quantizer.codebookCount);
  const chunkFrames = Math.max(1, Math.floor(options.chunkFrames));
  for (let first = 0; first < frameCount; first += chunkFrames) {
    const count = Math.min(chunkFrames, frameCount - first);
    scratch.reset();
    let rows = count * config.frameLength;
    let x = scratch.take(rows);
    const start = first * config.frameLength;
    const available = Math.max(0, Math.min(rows, pcm.length - start));
    x.set(pcm.subarray(start, start + available));
    x.fill(0, available);
    for (const stage of stages) {
      x = stage.forward(x, rows, scratch);
      rows = (rows * stage.up) / stage.down;
      options.observer?.(stage.name, x, stage.channels, rows);
    }
    const chunkGaps = gaps?.subarray(first * quantizer.codebookCount, (first + count) * quantizer.codebookCount);
    frames.push(...quantizer.encode(x, rows, chunkGaps));
  }
  if (gaps !== undefined) options.margins?.(gaps);
  return frames;
}
