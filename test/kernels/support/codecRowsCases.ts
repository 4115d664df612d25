// Contract cases for the codec's ConvNeXt row kernels (kernels/cuda/codec_rows.cu) against the cpu codec: the causal
// depthwise conv with its carried history (src/codec/conv.ts CausalConv, depthwise) at the latent width 1024 and odd
// sizes, lanes at scattered slots, with equivalences (one lane whole and in chunks of 1, 4, 32 and irregular ones;
// lanes together and alone, bit for bit); LayerNorm (src/codec/rows.ts layerNorm) at 1024 and odd widths, rows far
// from zero mean. Every case name starts with "codec rows" (the quantizer's is in codecQuantizerCases.ts).
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import { codecHistoryUpdate } from '../../../src/backend/cuda/ops/codecConv.ts';
import { codecDepthwiseConv, codecLayerNorm } from '../../../src/backend/cuda/ops/codecRows.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import { layerNorm } from '../../../src/codec/rows.ts';
import { ScratchArena } from '../../../src/codec/scratch.ts';
import { type CodecLanes, convWeights, cpuConv, keptHistory, lanesTable, longestUnits, widen } from './codecCases.ts';
import type { EquivalenceCase, HostInput, KernelCase, OutputSpec, Prepared, ShapeCase } from './contract.ts';
import { copySlab, lanes, type Sequences } from './deltaNetCases.ts';
import { type Random, randomFloat32, streamOf } from './random.ts';

/** Seven fp32 fmas and the bias: a few ulps at the output's RMS where the cpu rounds its fp64 sum once. */
const DEPTHWISE_BOUND = 1e-6;
const DEPTHWISE_ULPS = 8;
/** fp32 mean and variance against fp64 ones, then rsqrt and one fma: a few ulps of each normalised value. */
const LAYER_NORM_BOUND = 1e-6;
const LAYER_NORM_ULPS = 16;
const LAYER_NORM_EPS = 1e-6;

type Schedule = (cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) => void;

interface DepthwiseLayer {
  readonly channels: number;
  readonly kernel: number;
}

/** Every tensor from its own stream (draw(i)), slots and rows in order, so prefixes of lanes repeat. */
function depthwiseInputs(layer: DepthwiseLayer, slots: number, rows: number, draw: (index: number) => Random) {
  const { channels, kernel } = layer;
  return {
    weight: convWeights(draw(0), channels * kernel, kernel),
    bias: randomFloat32(draw(1), channels, 0.1),
    history: randomFloat32(draw(2), slots * (kernel - 1) * channels, 1),
    x: randomFloat32(draw(3), rows * channels, 1),
  };
}

type DepthwiseInputs = ReturnType<typeof depthwiseInputs>;

function depthwiseDevice(layer: DepthwiseLayer, drawn: DepthwiseInputs): Record<string, HostInput> {
  const values: Record<string, HostInput> = { weight: drawn.weight, bias: drawn.bias, x: drawn.x };
  if (layer.kernel > 1) values.history = drawn.history;
  return values;
}

function depthwiseOutputs(layer: DepthwiseLayer, slots: number, rows: number): OutputSpec[] {
  const outputs: OutputSpec[] = [{ name: 'out', kind: 'f32', count: rows * layer.channels, ulpFloor: 1 }];
  const historyCount = slots * (layer.kernel - 1) * layer.channels;
  // The carried rows are copies of x: exact.
  if (historyCount > 0) outputs.push({ name: 'historyOut', kind: 'f32', count: historyCount, bound: 0, ulps: 0 });
  return outputs;
}

/** One depthwise conv call over `sequences` (table at `table`), then its history update. */
function runDepthwise(
  cuda: CudaContext,
  p: Readonly<Record<string, bigint>>,
  kernel: KernelName | undefined,
  layer: DepthwiseLayer,
  rowScale: number,
  table: bigint,
  sequences: Sequences,
): void {
  const { channels } = layer;
  const historyRows = layer.kernel - 1;
  const history = historyRows > 0 ? p.historyOut! : p.x!;
  const call = {
    sequences: table,
    sequenceCount: sequences.length,
    longestSequence: longestUnits(sequences),
    rowScale,
  };
  const conv = { out: p.out!, x: p.x!, weight: p.weight!, bias: p.bias!, history, channels, kernel: layer.kernel };
  codecDepthwiseConv(cuda, { ...call, ...conv }, { kernel });
  if (historyRows === 0) return;
  const update = { history, x: p.x!, xStride: channels, channels, historyRows };
  codecHistoryUpdate(cuda, { ...update, ...call });
}

function depthwiseReference(layer: DepthwiseLayer, lanesOf: CodecLanes, drawn: DepthwiseInputs) {
  const { channels, kernel } = layer;
  const historyRows = kernel - 1;
  const { firsts, units } = lanesTable(lanesOf);
  const out = new Float32Array(units * lanesOf.rowScale * channels);
  const historyOut = Float32Array.from(drawn.history);
  const shape = { inputs: channels, outputs: channels, kernel, dilation: 1, depthwise: true };
  lanesOf.sequences.forEach(([slot, laneUnits], index) => {
    const first = firsts[index]! * lanesOf.rowScale;
    const rows = laneUnits * lanesOf.rowScale;
    const x = drawn.x.subarray(first * channels, (first + rows) * channels);
    const slab = drawn.history.subarray(slot * historyRows * channels, (slot + 1) * historyRows * channels);
    out.set(cpuConv(shape, drawn.weight, drawn.bias, slab, x, rows), first * channels);
    historyOut.set(keptHistory(slab, x, historyRows, channels), slot * historyRows * channels);
  });
  return { out: widen(out), historyOut: widen(historyOut) };
}

function depthwisePrepared(
  layer: DepthwiseLayer,
  lanesOf: CodecLanes,
  draw: (index: number) => Random,
  nonFinite: boolean,
): Prepared {
  const { table, units } = lanesTable(lanesOf);
  const rows = units * lanesOf.rowScale;
  const drawn = depthwiseInputs(layer, lanesOf.slots, rows, draw);
  const historyRows = layer.kernel - 1;
  if (nonFinite) {
    drawn.x[1] = Number.NaN;
    drawn.x[rows * layer.channels - 1] = Number.NEGATIVE_INFINITY;
    const slot = lanesOf.sequences[0]![0];
    if (historyRows > 0) drawn.history[(slot * historyRows + historyRows - 1) * layer.channels + 2] = Infinity;
  }
  const historyBytes = drawn.history.length * 4;
  return {
    inputs: { ...depthwiseDevice(layer, drawn), sequences: table },
    outputs: depthwiseOutputs(layer, lanesOf.slots, rows),
    reference: () => depthwiseReference(layer, lanesOf, drawn),
    run(cuda, p, kernel) {
      if (historyBytes > 0) copySlab(cuda, p.historyOut!, p.history!, historyBytes);
      runDepthwise(cuda, p, kernel, layer, lanesOf.rowScale, p.sequences!, lanesOf.sequences);
    },
  };
}

function depthwiseShape(label: string, layer: DepthwiseLayer, lanesOf: CodecLanes): ShapeCase {
  return {
    label: `${label} [${layer.channels} channels k${layer.kernel}, ${lanesOf.sequences.length} lanes × ${lanesOf.rowScale} rows per unit]`,
    prepare: (random, nonFinite) => depthwisePrepared(layer, lanesOf, () => random, nonFinite),
  };
}

/** One lane (slot 1 of 3) whole and in chunks of 1, 4, 32 and irregular ones; lanes of 7, 1, 4 units together and alone. */
function depthwiseSchedules(layer: DepthwiseLayer, rowScale: number, units: number): EquivalenceCase[] {
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
  const scheduleOf =
    (lanesOf: CodecLanes, calls: readonly (readonly [number, number])[], tableName: string): Schedule =>
    (cuda, p, kernel) => {
      copySlab(cuda, p.historyOut!, p.history!, lanesOf.slots * (layer.kernel - 1) * layer.channels * 4);
      for (const [entry, count] of calls) {
        const sequences = lanesOf.sequences.slice(entry, entry + count);
        runDepthwise(cuda, p, kernel, layer, rowScale, p[tableName]! + BigInt(entry * 16), sequences);
      }
    };
  const oneLane: CodecLanes = { slots: 3, rowScale, sequences: [[1, units]] };
  const chunked: EquivalenceCase = {
    label: `one lane of ${units} units × ${rowScale} rows, ${layer.channels} channels k${layer.kernel}`,
    prepare(random) {
      const drawn = depthwiseInputs(layer, 3, units * rowScale, () => random);
      const tables: Record<string, HostInput> = {};
      const runs: Record<string, Schedule> = {};
      for (const [name, sizes] of Object.entries(chunking)) {
        const entries = cut(sizes);
        tables[`table ${name}`] = lanesTable({ ...oneLane, sequences: entries }).table;
        const calls = entries.map((_, index) => [index, 1] as const);
        runs[name] = scheduleOf({ ...oneLane, sequences: entries }, calls, `table ${name}`);
      }
      return {
        inputs: { ...depthwiseDevice(layer, drawn), ...tables },
        outputs: depthwiseOutputs(layer, 3, units * rowScale),
        runs,
      };
    },
  };
  const scattered: CodecLanes = {
    slots: 4,
    rowScale,
    sequences: [
      [2, 7],
      [0, 1],
      [3, 4],
    ],
  };
  const together: EquivalenceCase = {
    label: `lanes of 7, 1 and 4 units at slots 2, 0, 3 (${layer.channels} channels)`,
    prepare(random) {
      const drawn = depthwiseInputs(layer, scattered.slots, 12 * rowScale, () => random);
      const separately = [0, 1, 2].map((entry) => [entry, 1] as const);
      return {
        inputs: { ...depthwiseDevice(layer, drawn), table: lanesTable(scattered).table },
        outputs: depthwiseOutputs(layer, scattered.slots, 12 * rowScale),
        runs: { together: scheduleOf(scattered, [[0, 3]], 'table'), alone: scheduleOf(scattered, separately, 'table') },
      };
    },
  };
  return [chunked, together];
}

const latentDepthwise: DepthwiseLayer = { channels: 1024, kernel: 7 };

export const codecDepthwiseConvCase: KernelCase = {
  name: 'codec rows: causal depthwise conv with carried history',
  bound: DEPTHWISE_BOUND,
  ulps: DEPTHWISE_ULPS,
  shapes: [
    depthwiseShape('ConvNeXt dwconv, lanes of 2, 1, 1 frames, real', latentDepthwise, {
      slots: 5,
      rowScale: 2,
      sequences: [
        [4, 2],
        [0, 1],
        [2, 1],
      ],
    }),
    depthwiseShape(
      'odd sizes, lanes of 5, 1, 2 units',
      { channels: 45, kernel: 5 },
      {
        slots: 5,
        rowScale: 3,
        sequences: [
          [4, 5],
          [0, 1],
          [2, 2],
        ],
      },
    ),
    depthwiseShape('one tap, no history', { channels: 37, kernel: 1 }, { slots: 2, rowScale: 5, sequences: [[1, 2]] }),
  ],
  invariance: [
    {
      label: 'decode lanes of 4 rows, ConvNeXt dwconv, real',
      prepare: (seed: number, count: number) =>
        depthwisePrepared(
          latentDepthwise,
          { slots: count, rowScale: 4, sequences: lanes(count) },
          (index) => streamOf(seed, index),
          false,
        ),
      elementsPerRow: { out: 4 * 1024, historyOut: 6 * 1024 },
    },
  ],
  equivalences: [
    ...depthwiseSchedules({ channels: 160, kernel: 7 }, 4, 45),
    ...depthwiseSchedules(latentDepthwise, 2, 9),
  ],
};

/** Rows [rows, width] around `mean`, each with its own spread. */
function layerNormPrepared(
  rows: number,
  width: number,
  mean: number,
  draw: (index: number) => Random,
  nonFinite: boolean,
): Prepared {
  const weight = randomFloat32(draw(0), width, 1);
  const bias = randomFloat32(draw(1), width, 0.1);
  const x = randomFloat32(draw(2), rows * width, 1).map((value, index) =>
    Math.fround(mean + value * (1 + (Math.floor(index / width) % 5))),
  );
  if (nonFinite) {
    x[1] = Number.NaN;
    if (rows > 1) x[width + width - 1] = Number.POSITIVE_INFINITY;
    weight[Math.min(3, width - 1)] = Number.NEGATIVE_INFINITY;
  }
  return {
    inputs: { x, weight, bias },
    outputs: [{ name: 'out', kind: 'f32', count: rows * width, ulpFloor: 1 }],
    reference: () => ({ out: widen(layerNorm(x, rows, width, weight, bias, LAYER_NORM_EPS, new ScratchArena())) }),
    run(cuda, p, kernel) {
      codecLayerNorm(
        cuda,
        { out: p.out!, x: p.x!, weight: p.weight!, bias: p.bias!, rows, width, eps: LAYER_NORM_EPS },
        { kernel },
      );
    },
  };
}

function layerNormShape(label: string, rows: number, width: number, mean = 0): ShapeCase {
  return {
    label: `${label} [${rows} rows × ${width}]`,
    prepare: (random, nonFinite) => layerNormPrepared(rows, width, mean, () => random, nonFinite),
  };
}

export const codecLayerNormCase: KernelCase = {
  name: 'codec rows: LayerNorm (biased variance)',
  bound: LAYER_NORM_BOUND,
  ulps: LAYER_NORM_ULPS,
  shapes: [
    layerNormShape('ConvNeXt norm, latent width, real', 6, 1024),
    layerNormShape('rows around mean 30', 5, 1024, 30),
    layerNormShape('odd sizes', 7, 45),
    layerNormShape('one row wider than the block', 1, 4096),
    layerNormShape('two columns', 3, 2),
  ],
  invariance: [
    {
      label: 'rows of the latent width',
      prepare: (seed: number, rows: number) =>
        layerNormPrepared(rows, 1024, 0, (index) => streamOf(seed, index), false),
      elementsPerRow: { out: 1024 },
    },
  ],
};
