// One codec conv layer as the contract runs it (codecConvCases.ts holds the cases): inputs drawn per tensor stream,
// the launch (the conv, then its history update) over a call's lanes, and the cpu reference per lane: CausalConv,
// Snake and the residual add (src/codec/conv.ts), or at k = 1 rows.ts linear with geluInPlace and the γ residual of
// convnext.ts.
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import {
  type CodecActivation,
  type CodecConvVariant,
  type CodecPartials,
  type CodecPrecision,
  codecConv,
  codecHistoryUpdate,
  mmaGroupChannels,
  mmaStagedBytes,
} from '../../../src/backend/cuda/ops/codecConv.ts';
import { codecConvWeightLayout } from '../../../src/backend/cuda/ops/codecWeightLayout.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import { geluInPlace, linear } from '../../../src/codec/rows.ts';
import { ScratchArena } from '../../../src/codec/scratch.ts';
import {
  type CodecLanes,
  convWeights,
  cpuConv,
  cpuSnake,
  deviceWeights,
  keptHistory,
  lanesTable,
  longestUnits,
  referenceInputs,
  referenceWeights,
  snakeAlpha,
  widen,
} from './codecCases.ts';
import { SNAKE_BOUND, SNAKE_ULPS } from './codecSnakeCases.ts';
import type { HostInput, OutputSpec, Prepared, ShapeCase } from './contract.ts';
import { copySlab, type Sequences } from './deltaNetCases.ts';
import { type Random, randomFloat32 } from './random.ts';

export interface ConvLayer {
  readonly inputs: number;
  readonly outputs: number;
  readonly kernel: number;
  readonly dilation: number;
  readonly snake: boolean;
  readonly residual: boolean;
  /** Whether the conv adds a bias (the transformer's linears have none). */
  readonly bias: boolean;
  /** A per-output scale (ConvNeXt γ) on the conv before the residual. */
  readonly scale: boolean;
  readonly activation: CodecActivation;
  readonly precision: CodecPrecision;
  /** Elements between rows of x (default inputs). */
  readonly xStride?: number;
  /** The kernel to force (default: the launcher's choice). */
  readonly variant?: CodecConvVariant;
  /** `f16`: the tensor-core conv reads its inputs staged once a call (codec_conv_stage_f16), not staged per block. */
  readonly staged?: boolean;
}

/** fp32 sums of up to 1536·7 products in chunks of 32 channels: a few ulps at the output's RMS (measured ≈ 3e-7). */
export const CONV_BOUND = 2e-6;
export const CONV_ULPS = 32;

/**
 * The tensor cores' bound (the `f16` precision): their fp32 accumulation truncates each mma's sum instead of rounding
 * it, losing under one ulp of the running sum per mma, so an output is held to one ulp (at its RMS) per mma of a
 * group's chain, K · ⌈min(Cin, G) / 16⌉, and half an ulp per add of a group's sum, beside the CUDA-core kernels' own
 * margin.
 */
export function tensorCoreUlps(inputs: number, kernel: number): number {
  const group = mmaGroupChannels(kernel);
  return kernel * Math.ceil(Math.min(inputs, group) / 16) + Math.ceil(inputs / group) + CONV_ULPS;
}

/** The out spec's gates: the case's, or for `f16` the tensor cores' bound in ulps and in norm (2⁻²⁴ an ulp). */
export function outGates(precision: CodecPrecision, inputs: number, kernel: number) {
  if (precision !== 'f16') return {};
  const ulps = tensorCoreUlps(inputs, kernel);
  return { ulps, bound: ulps * 2 ** -24 };
}

export type Schedule = (cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) => void;

export const historyRowsOf = (layer: ConvLayer) => (layer.kernel - 1) * layer.dilation;

/** Whether a control replaces the history update (the conv otherwise): each launch keeps its own kernel. */
function kernelsFor(kernel: KernelName | undefined) {
  const update = kernel?.name.includes('history_update') ?? false;
  return { conv: update ? undefined : kernel, update: update ? kernel : undefined };
}

/** Every tensor from its own stream (draw(i)), slots and rows in order, so prefixes of lanes repeat. */
export function convInputs(layer: ConvLayer, slots: number, rows: number, draw: (index: number) => Random) {
  const { inputs, outputs, kernel } = layer;
  const xStride = layer.xStride ?? inputs;
  return {
    weight: convWeights(draw(0), outputs * inputs * kernel, inputs * kernel),
    bias: randomFloat32(draw(1), outputs, 0.1),
    alpha: layer.snake ? snakeAlpha(draw(2), inputs) : undefined,
    history: randomFloat32(draw(3), slots * historyRowsOf(layer) * inputs, 1),
    x: randomFloat32(draw(4), rows * xStride, 1),
    residual: layer.residual ? randomFloat32(draw(5), rows * outputs, 1) : undefined,
    scale: layer.scale ? randomFloat32(draw(6), outputs, 0.5) : undefined,
  };
}

export type ConvInputs = ReturnType<typeof convInputs>;

export function deviceInputs(layer: ConvLayer, drawn: ConvInputs): Record<string, HostInput> {
  const { inputs, outputs, kernel, precision } = layer;
  const laid = codecConvWeightLayout(drawn.weight, outputs, inputs, kernel);
  const values: Record<string, HostInput> = { weight: deviceWeights(laid, precision), x: drawn.x };
  if (layer.bias) values.bias = drawn.bias;
  if (drawn.scale) values.scale = drawn.scale;
  if (drawn.alpha) values.alpha = drawn.alpha;
  if (drawn.residual) values.residual = drawn.residual;
  if (historyRowsOf(layer) > 0) values.history = drawn.history;
  if (layer.staged) {
    const historyRows = historyRowsOf(layer);
    const rows = drawn.x.length / (layer.xStride ?? inputs);
    const slots = historyRows > 0 ? drawn.history.length / (historyRows * inputs) : 1;
    values.stagedInputs = new Float32Array(Math.ceil(mmaStagedBytes(rows, slots, inputs, historyRows) / 4));
  }
  return values;
}

export function convOutputs(layer: ConvLayer, slots: number, rows: number): OutputSpec[] {
  const gates = outGates(layer.precision, layer.inputs, layer.kernel);
  const outputs: OutputSpec[] = [{ name: 'out', kind: 'f32', count: rows * layer.outputs, ulpFloor: 1, ...gates }];
  const historyCount = slots * historyRowsOf(layer) * layer.inputs;
  // The carried rows are copies of x, or the Snake kernel's own values where it applies (codecSnakeCases' bound).
  const [bound, ulps] = layer.snake ? [SNAKE_BOUND, SNAKE_ULPS] : [0, 0];
  if (historyCount > 0)
    outputs.push({ name: 'historyOut', kind: 'f32', count: historyCount, bound, ulps, ulpFloor: 1 });
  return outputs;
}

/** One conv call over `sequences` (table at `table`, entries from `first`), then its history update. */
export function runConvCall(
  cuda: CudaContext,
  p: Readonly<Record<string, bigint>>,
  kernel: KernelName | undefined,
  layer: ConvLayer,
  rowScale: number,
  table: bigint,
  sequences: Sequences,
  partials?: CodecPartials,
  /** The rows of x (all lanes), for a staged layer's scratch. */
  rows?: number,
): void {
  const { inputs, outputs } = layer;
  if (layer.staged && rows === undefined) throw new Error('a staged conv call needs the rows of x');
  const xStride = layer.xStride ?? inputs;
  const history = historyRowsOf(layer) > 0 ? p.historyOut! : p.x!;
  const call = {
    sequences: table,
    sequenceCount: sequences.length,
    longestSequence: longestUnits(sequences),
    rowScale,
  };
  const kernels = kernelsFor(kernel);
  codecConv(
    cuda,
    {
      ...call,
      out: p.out!,
      outStride: outputs,
      x: p.x!,
      xStride,
      weight: p.weight!,
      bias: p.bias,
      alpha: p.alpha,
      residual: p.residual,
      residualStride: outputs,
      scale: p.scale,
      history,
      inputs,
      outputs,
      kernel: layer.kernel,
      dilation: layer.dilation,
      activation: layer.activation,
      precision: layer.precision,
      variant: layer.variant,
      ...(partials === undefined ? {} : { partials }),
      ...(layer.staged && rows !== undefined ? { staged: stagedOf(layer, p, rows, sequences.length) } : {}),
    },
    { kernel: kernels.conv },
  );
  const historyRows = historyRowsOf(layer);
  if (historyRows === 0) return;
  const update = { history, x: p.x!, xStride, alpha: p.alpha, channels: inputs, historyRows };
  codecHistoryUpdate(cuda, { ...update, ...call }, { kernel: kernels.update });
}

/** A staged call's scratch: `deviceInputs` allocated it for every lane of the case, so it holds the call's. */
function stagedOf(layer: ConvLayer, p: Readonly<Record<string, bigint>>, rows: number, sequenceCount: number) {
  const bytes = mmaStagedBytes(rows, sequenceCount, layer.inputs, historyRowsOf(layer));
  return { pointer: p.stagedInputs!, rows, bytes };
}

/** A k = 1 layer through rows.ts linear (the ConvNeXt and transformer arithmetic), others through CausalConv. */
function convOrLinear(
  layer: ConvLayer,
  weight: Float32Array,
  bias: Float32Array,
  history: Float32Array,
  x: Float32Array,
  rows: number,
): Float32Array {
  const { inputs, outputs } = layer;
  if (layer.kernel === 1) {
    const y = linear(x, rows, inputs, outputs, weight, layer.bias ? bias : undefined, new ScratchArena());
    return Float32Array.from(y);
  }
  return cpuConv(layer, weight, layer.bias ? bias : new Float32Array(outputs), history, x, rows);
}

function convReference(layer: ConvLayer, lanes: CodecLanes, drawn: ConvInputs) {
  const { inputs, outputs, precision } = layer;
  const xStride = layer.xStride ?? inputs;
  const historyRows = historyRowsOf(layer);
  const { firsts, units } = lanesTable(lanes);
  const out = new Float32Array(units * lanes.rowScale * outputs);
  const historyOut = Float32Array.from(drawn.history);
  const weight = referenceWeights(drawn.weight, precision);
  lanes.sequences.forEach(([slot, laneUnits], index) => {
    const first = firsts[index]! * lanes.rowScale;
    const rows = laneUnits * lanes.rowScale;
    const x = new Float32Array(rows * inputs);
    for (let row = 0; row < rows; row++) {
      x.set(drawn.x.subarray((first + row) * xStride, (first + row) * xStride + inputs), row * inputs);
    }
    const snaked = cpuSnake(x, rows, inputs, drawn.alpha);
    const slab = drawn.history.subarray(slot * historyRows * inputs, (slot + 1) * historyRows * inputs);
    const seen = (values: Float32Array) => referenceInputs(values, precision);
    const y = convOrLinear(layer, weight, drawn.bias, seen(slab), seen(snaked), rows);
    for (let element = 0; element < y.length; element++) {
      let value = y[element]!;
      const residual = drawn.residual?.[first * outputs + element] ?? 0;
      // convnext.ts: x + fround(γ · projected); the kernel's one fma rounds once where this rounds twice.
      if (drawn.scale) value = Math.fround(residual + Math.fround(drawn.scale[element % outputs]! * value));
      else if (drawn.residual) value = Math.fround(residual + value);
      if (layer.activation === 'tanh') value = Math.fround(Math.tanh(value));
      y[element] = value;
    }
    if (layer.activation === 'gelu') geluInPlace(y);
    out.set(y, first * outputs);
    historyOut.set(keptHistory(slab, snaked, historyRows, inputs), slot * historyRows * inputs);
  });
  return { out: widen(out), historyOut: widen(historyOut) };
}

export function convPrepared(
  layer: ConvLayer,
  lanes: CodecLanes,
  draw: (index: number) => Random,
  nonFinite: boolean,
): Prepared {
  const { table, units } = lanesTable(lanes);
  const rows = units * lanes.rowScale;
  const drawn = convInputs(layer, lanes.slots, rows, draw);
  const historyRows = historyRowsOf(layer);
  if (nonFinite) {
    const xStride = layer.xStride ?? layer.inputs;
    drawn.x[1] = Number.NaN;
    drawn.x[(rows - 1) * xStride + layer.inputs - 1] = Number.NEGATIVE_INFINITY;
    const slot = lanes.sequences[0]![0];
    if (historyRows > 0)
      drawn.history[(slot * historyRows + historyRows - 1) * layer.inputs + 2] = Number.POSITIVE_INFINITY;
  }
  const historyBytes = drawn.history.length * 4;
  return {
    inputs: { ...deviceInputs(layer, drawn), sequences: table },
    outputs: convOutputs(layer, lanes.slots, rows),
    reference: () => convReference(layer, lanes, drawn),
    run(cuda, p, kernel) {
      if (historyBytes > 0) copySlab(cuda, p.historyOut!, p.history!, historyBytes);
      runConvCall(cuda, p, kernel, layer, lanes.rowScale, p.sequences!, lanes.sequences, undefined, rows);
    },
  };
}

export function convShape(label: string, layer: ConvLayer, lanes: CodecLanes): ShapeCase {
  const { inputs, outputs, kernel, dilation } = layer;
  return {
    label: `${label} [${inputs}→${outputs} k${kernel} d${dilation}, ${lanes.sequences.length} lanes × ${lanes.rowScale} rows per unit]`,
    prepare: (random, nonFinite) => convPrepared(layer, lanes, () => random, nonFinite),
  };
}

export const layerOf = (shape: Partial<ConvLayer> & Pick<ConvLayer, 'inputs' | 'outputs' | 'kernel'>): ConvLayer => ({
  dilation: 1,
  snake: false,
  residual: false,
  bias: true,
  scale: false,
  activation: 'identity',
  precision: 'f32',
  ...shape,
});
