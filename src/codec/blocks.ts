// Builders for the codec's shared blocks from their checkpoint names (weights.ts), the named stages the encode and
// decode pipelines run, and the stage-output observer type.
// Activations are channels-first [C, T]; convs here are causal and carry their own left context.
import { CausalConv, ResidualUnit, Snake } from './conv.ts';
import type { ScratchArena } from './scratch.ts';
import { type CodecWeights, weight } from './weights.ts';

/** Receives each named stage output of a pass: values [channels, rows]. */
export type StageObserver = (name: string, values: Float32Array, channels: number, rows: number) => void;

/** Anything that maps [Cin, rows] to [Cout, rows'] in scratch memory. */
export interface CodecLayer {
  forward(x: Float32Array, rows: number, scratch: ScratchArena): Float32Array;
}

/** One named step of a pipeline: [Cin, rows] → [channels, rows · up / down]. */
export interface CodecStage extends CodecLayer {
  /** The oracle's name for its output (decode.post_module, encode.encoder.0, ...). */
  readonly name: string;
  readonly channels: number;
  readonly up: number;
  readonly down: number;
}

export function codecStage(
  name: string,
  channels: number,
  layer: CodecLayer,
  rate: { up?: number; down?: number } = {},
): CodecStage {
  return {
    name,
    channels,
    up: rate.up ?? 1,
    down: rate.down ?? 1,
    forward: (x, rows, scratch) => layer.forward(x, rows, scratch),
  };
}

/** Causal conv (weight-normed, folded) with `name.conv.weight` / `name.conv.bias`. */
export function convFrom(
  weights: CodecWeights,
  name: string,
  inputs: number,
  outputs: number,
  kernel: number,
  options: { dilation?: number; stride?: number } = {},
): CausalConv {
  return new CausalConv(
    { inputs, outputs, kernel, ...options },
    weight(weights, `${name}.conv.weight`),
    weight(weights, `${name}.conv.bias`),
  );
}

export function snakeFrom(weights: CodecWeights, name: string): Snake {
  return new Snake(weight(weights, `${name}.alpha`));
}

/** Residual unit at `name` (its Sequential is `name.block`): Snake, dilated conv k7, Snake, conv k1, plus the input. */
export function residualUnitFrom(
  weights: CodecWeights,
  name: string,
  channels: number,
  dilation: number,
): ResidualUnit {
  return new ResidualUnit(
    snakeFrom(weights, `${name}.block.0`),
    convFrom(weights, `${name}.block.1`, channels, channels, 7, { dilation }),
    snakeFrom(weights, `${name}.block.2`),
    convFrom(weights, `${name}.block.3`, channels, channels, 1),
  );
}

/** Dilations of the three residual units of every encoder and decoder block, in order. */
export const RESIDUAL_DILATIONS = [1, 3, 9] as const;
