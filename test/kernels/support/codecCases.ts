// What the codec convolution cases share (codecConvCases.ts, codecTransposedConvCases.ts, codecSnakeCases.ts): the
// call's lanes in the sequence table, weights drawn at the real scale, and the cpu codec's own layers (src/codec/
// conv.ts) run on one lane as the reference: the lane's carried history pushed first, then its rows. The cpu codec
// works channels-first [C, T]; the kernels take rows [T, C].
import type { CodecPrecision } from '../../../src/backend/cuda/ops/codecConv.ts';
import { toF16Bits } from '../../../src/backend/cuda/ops/codecWeightLayout.ts';
import { CausalConv, CausalTransposedConv, Snake } from '../../../src/codec/conv.ts';
import { ScratchArena } from '../../../src/codec/scratch.ts';
import { f16BitsToFloat32 } from '../../../src/numeric/dtypes.ts';
import { type Sequences, sequenceTable } from './deltaNetCases.ts';
import { type Bf16Tensor, type Random, randomFloat32 } from './random.ts';

/** A call's lanes: (slot, rows in table units) each, laid out one after another, and rows per unit at the layer. */
export interface CodecLanes {
  readonly slots: number;
  readonly sequences: Sequences;
  readonly rowScale: number;
}

export function lanesTable(lanes: CodecLanes): { table: Int32Array; firsts: number[]; units: number } {
  const { table, firsts, rows } = sequenceTable(lanes.sequences);
  return { table, firsts, units: rows };
}

export function longestUnits(sequences: Sequences): number {
  return Math.max(...sequences.map(([, units]) => units));
}

/** Rows [rows, channels] (rows `stride` apart) → channels-first [channels, rows]. */
export function channelsFirst(values: Float32Array, rows: number, channels: number, stride = channels): Float32Array {
  const out = new Float32Array(rows * channels);
  for (let row = 0; row < rows; row++) {
    for (let channel = 0; channel < channels; channel++) out[channel * rows + row] = values[row * stride + channel]!;
  }
  return out;
}

/** Channels-first [channels, rows] → rows [rows, channels]. */
export function rowsFirst(values: Float32Array, rows: number, channels: number): Float32Array {
  const out = new Float32Array(rows * channels);
  for (let channel = 0; channel < channels; channel++) {
    for (let row = 0; row < rows; row++) out[row * channels + channel] = values[channel * rows + row]!;
  }
  return out;
}

/** Weights at the scale that keeps a conv's outputs near unit variance (fan-in inputs · taps). */
export function convWeights(random: Random, count: number, fanIn: number): Float32Array {
  const weight = randomFloat32(random, count, 1 / Math.sqrt(fanIn));
  return weight;
}

/** Snake's α, positive and spread around 1 as trained ones are. */
export function snakeAlpha(random: Random, channels: number): Float32Array {
  return Float32Array.from({ length: channels }, () => Math.fround(0.25 + 1.5 * random.next()));
}

/** The weights the reference sees: fp32 as drawn, or rounded to fp16 as the fp16-weights kernel holds them. */
export function referenceWeights(weight: Float32Array, precision: CodecPrecision): Float32Array {
  if (precision === 'f32') return weight;
  return Float32Array.from(toF16Bits(weight), (bits) => f16BitsToFloat32(bits));
}

/** The conv inputs the reference sees: as they are, or rounded to fp16 as the tensor-core (`f16`) kernel stages them. */
export function referenceInputs(values: Float32Array, precision: CodecPrecision): Float32Array {
  if (precision !== 'f16') return values;
  return Float32Array.from(toF16Bits(values), (bits) => f16BitsToFloat32(bits));
}

/** The kernel's weight upload: fp32 values, or fp16 bits (uploaded as a tensor's raw bits, as bf16 tensors are). */
export function deviceWeights(laid: Float32Array, precision: CodecPrecision): Float32Array | Bf16Tensor {
  if (precision === 'f32') return laid;
  return { bits: toF16Bits(laid), values: new Float64Array(0) };
}

/** [history rows; x rows] channels-first for the cpu layers: the lane's carried rows, then its conv inputs. */
function pushed(history: Float32Array, historyRows: number, inputs: Float32Array, rows: number, channels: number) {
  const all = new Float32Array((historyRows + rows) * channels);
  all.set(history.subarray(0, historyRows * channels));
  all.set(inputs, historyRows * channels);
  return channelsFirst(all, historyRows + rows, channels);
}

/** The cpu Snake over rows [rows, channels] (a new array), or the rows themselves without α. */
export function cpuSnake(x: Float32Array, rows: number, channels: number, alpha: Float32Array | undefined) {
  if (alpha === undefined) return x;
  const snake = new Snake(alpha);
  return rowsFirst(snake.forward(channelsFirst(x, rows, channels), rows, new ScratchArena()), rows, channels);
}

/** The last `keep` rows of history ++ inputs, rows [keep, channels]. */
export function keptHistory(history: Float32Array, inputs: Float32Array, keep: number, channels: number) {
  const all = new Float32Array(history.length + inputs.length);
  all.set(history);
  all.set(inputs, history.length);
  return all.slice(all.length - keep * channels);
}

export interface ConvShapeOf {
  readonly inputs: number;
  readonly outputs: number;
  readonly kernel: number;
  readonly dilation: number;
}

/** One lane through the cpu CausalConv: rows [rows, outputs] of its outputs (weight [Cout, Cin, K]). */
export function cpuConv(
  shape: ConvShapeOf,
  weight: Float32Array,
  bias: Float32Array,
  history: Float32Array,
  inputs: Float32Array,
  rows: number,
): Float32Array {
  const historyRows = (shape.kernel - 1) * shape.dilation;
  const conv = new CausalConv(shape, weight, bias);
  const y = conv.forward(
    pushed(history, historyRows, inputs, rows, shape.inputs),
    historyRows + rows,
    new ScratchArena(),
  );
  const all = rowsFirst(y, historyRows + rows, shape.outputs);
  return all.slice(historyRows * shape.outputs);
}

/** One lane through the cpu CausalTransposedConv: rows [rows · stride, outputs] (weight [Cin, Cout, K]). */
export function cpuTransposedConv(
  shape: { inputs: number; outputs: number; kernel: number; stride: number },
  weight: Float32Array,
  bias: Float32Array,
  history: Float32Array,
  historyRows: number,
  inputs: Float32Array,
  rows: number,
): Float32Array {
  const conv = new CausalTransposedConv(shape.inputs, shape.outputs, shape.kernel, shape.stride, weight, bias);
  const all = historyRows + rows;
  const y = conv.forward(pushed(history, historyRows, inputs, rows, shape.inputs), all, new ScratchArena());
  return rowsFirst(y, all * shape.stride, shape.outputs).slice(historyRows * shape.stride * shape.outputs);
}

export function widen(values: Float32Array): Float64Array {
  return Float64Array.from(values);
}

/** Lanes of 3, 1 and 2 units at slots 2, 0 and 3 of 4: the call that holds two variants of a kernel to each other. */
export function lanesOfThreeOneTwo(rowScale: number): CodecLanes {
  return {
    slots: 4,
    rowScale,
    sequences: [
      [2, 3],
      [0, 1],
      [3, 2],
    ],
  };
}
