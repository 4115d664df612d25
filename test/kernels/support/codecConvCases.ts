// Contract cases for the codec's causal dilated conv with its carried history (kernels/cuda/codec_conv.cu) against
// the cpu codec's CausalConv, Snake and residual add (src/codec/conv.ts) run per lane: the real decoder's widths
// (the first conv 1024→1536, residual convs at 768 with dilation 9, the pointwise conv with its residual, the last
// conv 96→1 with tanh), odd sizes, lanes at scattered slots with irregular row counts; fp32 and fp16 weights. The
// equivalences hold one lane decoded whole and in chunks of 1, 4, 32 and irregular ones, and lanes alone and together.
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import {
  type CodecActivation,
  type CodecPrecision,
  codecConv,
  codecConvWeightLayout,
  codecHistoryUpdate,
} from '../../../src/backend/cuda/ops/codecConv.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import {
  type CodecLanes,
  convWeights,
  cpuConv,
  cpuSnake,
  deviceWeights,
  keptHistory,
  lanesTable,
  longestUnits,
  referenceWeights,
  snakeAlpha,
  widen,
} from './codecCases.ts';
import { SNAKE_BOUND, SNAKE_ULPS } from './codecSnakeCases.ts';
import type { EquivalenceCase, HostInput, KernelCase, OutputSpec, Prepared, ShapeCase } from './contract.ts';
import { copySlab, lanes, type Sequences } from './deltaNetCases.ts';
import { type Random, randomFloat32, streamOf } from './random.ts';

export interface ConvLayer {
  readonly inputs: number;
  readonly outputs: number;
  readonly kernel: number;
  readonly dilation: number;
  readonly snake: boolean;
  readonly residual: boolean;
  readonly activation: CodecActivation;
  readonly precision: CodecPrecision;
  /** Elements between rows of x (default inputs). */
  readonly xStride?: number;
}

/** fp32 sums of up to 1536·7 products in chunks of 32 channels: a few ulps at the output's RMS (measured ≈ 3e-7). */
const CONV_BOUND = 2e-6;
const CONV_ULPS = 32;

type Schedule = (cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) => void;

const historyRowsOf = (layer: ConvLayer) => (layer.kernel - 1) * layer.dilation;

/** Whether a control replaces the history update (the conv otherwise): each launch keeps its own kernel. */
function kernelsFor(kernel: KernelName | undefined) {
  const update = kernel?.name.includes('history_update') ?? false;
  return { conv: update ? undefined : kernel, update: update ? kernel : undefined };
}

/** Every tensor from its own stream (draw(i)), slots and rows in order, so prefixes of lanes repeat. */
function convInputs(layer: ConvLayer, slots: number, rows: number, draw: (index: number) => Random) {
  const { inputs, outputs, kernel } = layer;
  const xStride = layer.xStride ?? inputs;
  return {
    weight: convWeights(draw(0), outputs * inputs * kernel, inputs * kernel),
    bias: randomFloat32(draw(1), outputs, 0.1),
    alpha: layer.snake ? snakeAlpha(draw(2), inputs) : undefined,
    history: randomFloat32(draw(3), slots * historyRowsOf(layer) * inputs, 1),
    x: randomFloat32(draw(4), rows * xStride, 1),
    residual: layer.residual ? randomFloat32(draw(5), rows * outputs, 1) : undefined,
  };
}

type ConvInputs = ReturnType<typeof convInputs>;

function deviceInputs(layer: ConvLayer, drawn: ConvInputs): Record<string, HostInput> {
  const { inputs, outputs, kernel, precision } = layer;
  const laid = codecConvWeightLayout(drawn.weight, outputs, inputs, kernel);
  const values: Record<string, HostInput> = { weight: deviceWeights(laid, precision), bias: drawn.bias, x: drawn.x };
  if (drawn.alpha) values.alpha = drawn.alpha;
  if (drawn.residual) values.residual = drawn.residual;
  if (historyRowsOf(layer) > 0) values.history = drawn.history;
  return values;
}

function convOutputs(layer: ConvLayer, slots: number, rows: number): OutputSpec[] {
  const outputs: OutputSpec[] = [{ name: 'out', kind: 'f32', count: rows * layer.outputs, ulpFloor: 1 }];
  const historyCount = slots * historyRowsOf(layer) * layer.inputs;
  // The carried rows are copies of x, or the Snake kernel's own values where it applies (codecSnakeCases' bound).
  const [bound, ulps] = layer.snake ? [SNAKE_BOUND, SNAKE_ULPS] : [0, 0];
  if (historyCount > 0)
    outputs.push({ name: 'historyOut', kind: 'f32', count: historyCount, bound, ulps, ulpFloor: 1 });
  return outputs;
}

/** One conv call over `sequences` (table at `table`, entries from `first`), then its history update. */
function runConvCall(
  cuda: CudaContext,
  p: Readonly<Record<string, bigint>>,
  kernel: KernelName | undefined,
  layer: ConvLayer,
  rowScale: number,
  table: bigint,
  sequences: Sequences,
): void {
  const { inputs, outputs } = layer;
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
      bias: p.bias!,
      alpha: p.alpha,
      residual: p.residual,
      residualStride: outputs,
      history,
      inputs,
      outputs,
      kernel: layer.kernel,
      dilation: layer.dilation,
      activation: layer.activation,
      precision: layer.precision,
    },
    { kernel: kernels.conv },
  );
  const historyRows = historyRowsOf(layer);
  if (historyRows === 0) return;
  const update = { history, x: p.x!, xStride, alpha: p.alpha, channels: inputs, historyRows };
  codecHistoryUpdate(cuda, { ...update, ...call }, { kernel: kernels.update });
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
    const y = cpuConv(layer, weight, drawn.bias, slab, snaked, rows);
    for (let element = 0; element < y.length; element++) {
      let value = y[element]!;
      if (drawn.residual) value = Math.fround(drawn.residual[first * outputs + element]! + value);
      if (layer.activation === 'tanh') value = Math.fround(Math.tanh(value));
      out[first * outputs + element] = value;
    }
    historyOut.set(keptHistory(slab, snaked, historyRows, inputs), slot * historyRows * inputs);
  });
  return { out: widen(out), historyOut: widen(historyOut) };
}

function convPrepared(
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
      runConvCall(cuda, p, kernel, layer, lanes.rowScale, p.sequences!, lanes.sequences);
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

/** One lane (slot 1 of 3) decoded whole and in chunks; lanes of 7, 1 and 4 units together and each alone. */
function convSchedules(layer: ConvLayer, rowScale: number, units: number): EquivalenceCase[] {
  const irregular = [3, 1, 7, 2, 13, 5, 1, 1, 9];
  const chunking = { whole: [units], 'chunks of 1': [1], 'chunks of 4': [4], 'chunks of 32': [32], irregular };
  const cut = (sizes: readonly number[]) => {
    const entries: (readonly [number, number])[] = [];
    for (let start = 0, index = 0; start < units; index++) {
      const size = Math.min(sizes[index % sizes.length]!, units - start);
      entries.push([1, size] as const);
      start += size;
    }
    return entries;
  };
  const alone: CodecLanes = {
    slots: 4,
    rowScale,
    sequences: [
      [2, 7],
      [0, 1],
      [3, 4],
    ],
  };
  const scheduleOf =
    (lanesOf: CodecLanes, calls: readonly (readonly [number, number])[], tableName: string): Schedule =>
    (cuda, p, kernel) => {
      const historyBytes = lanesOf.slots * historyRowsOf(layer) * layer.inputs * 4;
      if (historyBytes > 0) copySlab(cuda, p.historyOut!, p.history!, historyBytes);
      for (const [entry, count] of calls) {
        const sequences = lanesOf.sequences.slice(entry, entry + count);
        runConvCall(cuda, p, kernel, layer, rowScale, p[tableName]! + BigInt(entry * 16), sequences);
      }
    };
  const oneLane: CodecLanes = { slots: 3, rowScale, sequences: [[1, units]] };
  const chunked: EquivalenceCase = {
    label: `one lane of ${units} units × ${rowScale} rows, ${layer.inputs} channels k${layer.kernel} d${layer.dilation}`,
    prepare(random) {
      const drawn = convInputs(layer, 3, units * rowScale, () => random);
      const tables: Record<string, HostInput> = {};
      const runs: Record<string, Schedule> = {};
      for (const [name, sizes] of Object.entries(chunking)) {
        const entries = cut(sizes);
        const tableName = `table ${name}`;
        tables[tableName] = lanesTable({ ...oneLane, sequences: entries }).table;
        const starts = entries.map((_, index) => [index, 1] as const);
        runs[name] = scheduleOf({ ...oneLane, sequences: entries }, starts, tableName);
      }
      return {
        inputs: { ...deviceInputs(layer, drawn), ...tables },
        outputs: convOutputs(layer, 3, units * rowScale),
        runs,
      };
    },
  };
  const together: EquivalenceCase = {
    label: `lanes of 7, 1 and 4 units at slots 2, 0, 3 (${layer.inputs} channels)`,
    prepare(random) {
      const drawn = convInputs(layer, alone.slots, 12 * rowScale, () => random);
      const table = lanesTable(alone).table;
      return {
        inputs: { ...deviceInputs(layer, drawn), table },
        outputs: convOutputs(layer, alone.slots, 12 * rowScale),
        runs: {
          together: scheduleOf(alone, [[0, 3]], 'table'),
          alone: scheduleOf(
            alone,
            [
              [0, 1],
              [1, 1],
              [2, 1],
            ],
            'table',
          ),
        },
      };
    },
  };
  return [chunked, together];
}

/** Decode lanes of `rowScale` rows each at slots 0..n−1 (1, 2, 7, 64, 257 of them). */
function convInvariance(label: string, layer: ConvLayer, rowScale: number) {
  return {
    label,
    prepare: (seed: number, count: number) =>
      convPrepared(layer, { slots: count, rowScale, sequences: lanes(count) }, (index) => streamOf(seed, index), false),
    elementsPerRow: { out: rowScale * layer.outputs, historyOut: historyRowsOf(layer) * layer.inputs },
  };
}

const layerOf = (shape: Partial<ConvLayer> & Pick<ConvLayer, 'inputs' | 'outputs' | 'kernel'>): ConvLayer => ({
  dilation: 1,
  snake: false,
  residual: false,
  activation: 'identity',
  precision: 'f32',
  ...shape,
});

function convCaseOf(precision: CodecPrecision): KernelCase {
  const first = layerOf({ inputs: 1024, outputs: 1536, kernel: 7, precision });
  const dilated = layerOf({ inputs: 768, outputs: 768, kernel: 7, dilation: 9, snake: true, precision });
  const pointwise = layerOf({ inputs: 768, outputs: 768, kernel: 1, snake: true, residual: true, precision });
  const last = layerOf({ inputs: 96, outputs: 1, kernel: 7, snake: true, activation: 'tanh', precision });
  const odd = layerOf({ inputs: 37, outputs: 45, kernel: 5, dilation: 3, snake: true, xStride: 41, precision });
  const small = layerOf({ inputs: 192, outputs: 192, kernel: 7, dilation: 9, snake: true, precision });
  return {
    name: `codec causal conv with carried history, ${precision} weights`,
    bound: CONV_BOUND,
    ulps: CONV_ULPS,
    shapes: [
      convShape('first conv, 2 lanes × 1 frame, real', first, {
        slots: 4,
        rowScale: 4,
        sequences: [
          [3, 1],
          [0, 1],
        ],
      }),
      convShape('residual conv + Snake, 1 lane × 1 frame, real', dilated, {
        slots: 2,
        rowScale: 32,
        sequences: [[1, 1]],
      }),
      convShape('pointwise conv + Snake + residual, lanes of 5, 1, 2 frames, real', pointwise, {
        slots: 6,
        rowScale: 32,
        sequences: [
          [4, 5],
          [0, 1],
          [2, 2],
        ],
      }),
      convShape('last conv + Snake + tanh, 2 lanes × 1 frame, real', last, {
        slots: 2,
        rowScale: 2048,
        sequences: [
          [0, 1],
          [1, 1],
        ],
      }),
      convShape('odd sizes, lanes of 5, 1, 2 units', odd, {
        slots: 5,
        rowScale: 3,
        sequences: [
          [4, 5],
          [0, 1],
          [2, 2],
        ],
      }),
    ],
    invariance: [convInvariance('decode lanes of 4 rows, residual conv + Snake, real', dilated, 4)],
    equivalences: convSchedules(small, 8, 45),
  };
}

export const codecConvCase = convCaseOf('f32');
export const codecConvF16Case = convCaseOf('f16-weights');
