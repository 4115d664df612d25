// Contract cases for the codec's causal dilated conv with its carried history (kernels/cuda/codec_conv.cu, layers
// as codecConvLayers.ts runs them): the real decoder's widths (the first conv 1024→1536, residual convs at 768 with
// dilation 9, the pointwise conv with its residual, the last conv 96→1 with tanh on the narrow kernel), the ConvNeXt
// linears (pwconv1 + GELU, pwconv2 + γ + residual, a linear without bias), odd sizes, lanes at scattered slots with
// irregular row counts; fp32 and fp16 weights. The equivalences hold one lane decoded whole and in chunks of 1, 4,
// 32 and irregular ones, lanes alone and together, and the narrow kernel against the chunked one; the tensor-core
// conv also at the encoder's 64 channels (its tall block), split against unsplit, and aligned x against unaligned;
// its staged form (inputs through Snake once a call, codec_conv_stage_f16) is the same case again, plus staged
// against staged in the conv.
import {
  type CodecConvVariant,
  type CodecPrecision,
  mmaGroupChannels,
} from '../../../src/backend/cuda/ops/codecConv.ts';
import { type CodecLanes, lanesOfThreeOneTwo, lanesTable } from './codecCases.ts';
import {
  CONV_BOUND,
  CONV_ULPS,
  type ConvInputs,
  type ConvLayer,
  convInputs,
  convOutputs,
  convPrepared,
  convShape,
  deviceInputs,
  historyRowsOf,
  layerOf as plainLayerOf,
  runConvCall,
  type Schedule,
} from './codecConvLayers.ts';
import type { EquivalenceCase, HostInput, KernelCase } from './contract.ts';
import { copySlab, lanes } from './deltaNetCases.ts';
import { streamOf } from './random.ts';

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
    (lanesOf: CodecLanes, calls: readonly (readonly [number, number])[], tableName: string, rows: number): Schedule =>
    (cuda, p, kernel) => {
      const historyBytes = lanesOf.slots * historyRowsOf(layer) * layer.inputs * 4;
      if (historyBytes > 0) copySlab(cuda, p.historyOut!, p.history!, historyBytes);
      for (const [entry, count] of calls) {
        const sequences = lanesOf.sequences.slice(entry, entry + count);
        const table = p[tableName]! + BigInt(entry * 16);
        runConvCall(cuda, p, kernel, layer, rowScale, table, sequences, undefined, rows);
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
        runs[name] = scheduleOf({ ...oneLane, sequences: entries }, starts, tableName, units * rowScale);
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
          together: scheduleOf(alone, [[0, 3]], 'table', 12 * rowScale),
          alone: scheduleOf(
            alone,
            [
              [0, 1],
              [1, 1],
              [2, 1],
            ],
            'table',
            12 * rowScale,
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

/** One run of a three-lane equivalence: the conv call over lanes of 3, 1 and 2 units, with `rows` rows in all. */
type ThreeLaneRun = (call: {
  cuda: Parameters<Schedule>[0];
  p: Parameters<Schedule>[1];
  kernel: Parameters<Schedule>[2];
  rows: number;
  sequences: CodecLanes['sequences'];
}) => void;

/**
 * An equivalence of `runs` on lanes of 3, 1 and 2 units × rowScale rows at slots 2, 0 and 3 of 4: each run starts
 * from the drawn carried rows, and every run must give the same bytes. `layer` draws the inputs; `extra` adds any.
 */
function onThreeLanes(
  label: string,
  layer: ConvLayer,
  rowScale: number,
  runs: Record<string, ThreeLaneRun>,
  extra: (drawn: ConvInputs, rows: number) => Record<string, HostInput> = () => ({}),
): EquivalenceCase {
  const lanesOf = lanesOfThreeOneTwo(rowScale);
  const { table, units } = lanesTable(lanesOf);
  const rows = units * rowScale;
  const historyBytes = lanesOf.slots * historyRowsOf(layer) * layer.inputs * 4;
  const schedules = Object.fromEntries(
    Object.entries(runs).map(([name, run]): [string, Schedule] => [
      name,
      (cuda, p, kernel) => {
        if (historyBytes > 0) copySlab(cuda, p.historyOut!, p.history!, historyBytes);
        run({ cuda, p, kernel, rows, sequences: lanesOf.sequences });
      },
    ]),
  );
  return {
    label: `${label}, lanes of 3, 1, 2 units × ${rowScale} rows`,
    prepare(random) {
      const drawn = convInputs(layer, lanesOf.slots, rows, () => random);
      return {
        inputs: { ...deviceInputs(layer, drawn), sequences: table, ...extra(drawn, rows) },
        outputs: convOutputs(layer, lanesOf.slots, rows),
        runs: schedules,
      };
    },
  };
}

const shapeLabel = (layer: ConvLayer) => `${layer.inputs}→${layer.outputs} k${layer.kernel} d${layer.dilation}`;

/** A kernel (forced) against the chunked one on the same lanes: the same bytes. */
function againstChunked(layer: ConvLayer, rowScale: number, variant: 'narrow' | 'tiled'): EquivalenceCase {
  // The chunked run is always the real kernel: a control of the other variant is held to its bytes.
  const runOf =
    (chosen: CodecConvVariant): ThreeLaneRun =>
    ({ cuda, p, kernel, sequences }) =>
      runConvCall(
        cuda,
        p,
        chosen === variant ? kernel : undefined,
        { ...layer, variant: chosen },
        rowScale,
        p.sequences!,
        sequences,
      );
  return onThreeLanes(`${variant} against chunked kernel, ${shapeLabel(layer)}`, layer, rowScale, {
    [variant]: runOf(variant),
    chunked: runOf('chunked'),
  });
}

/**
 * The tensor-core conv split (each group of input channels on its own blocks, then combined) against unsplit: the
 * same bytes. A combine control runs in the split run, a conv control in the other.
 */
function splitAgainstUnsplit(layer: ConvLayer, rowScale: number): EquivalenceCase {
  const groups = Math.ceil(layer.inputs / mmaGroupChannels(layer.kernel));
  const partialFloats = (rows: number) => groups * rows * layer.outputs;
  const runOf =
    (variant: 'mma' | 'mma-split'): ThreeLaneRun =>
    ({ cuda, p, kernel, rows, sequences }) => {
      const combines = kernel?.name.includes('combine') ?? false;
      const chosen = combines === (variant === 'mma-split') ? kernel : undefined;
      const partials = { pointer: p.partials!, rows, bytes: partialFloats(rows) * 4 };
      runConvCall(cuda, p, chosen, { ...layer, variant }, rowScale, p.sequences!, sequences, partials, rows);
    };
  return onThreeLanes(
    `split against unsplit tensor-core conv, ${shapeLabel(layer)} (${groups} groups)`,
    layer,
    rowScale,
    { split: runOf('mma-split'), unsplit: runOf('mma') },
    (_, rows) => ({ partials: new Float32Array(partialFloats(rows)) }),
  );
}

/**
 * The tensor-core conv reading x 16-byte aligned (its inputs copied raw by cp.async, then through Snake) against the
 * same x one float past alignment (each value loaded and rounded in place): the same bytes. A conv control runs in
 * the aligned run.
 */
function rawAgainstDirect(layer: ConvLayer, rowScale: number): EquivalenceCase {
  const runOf =
    (shifted: boolean): ThreeLaneRun =>
    ({ cuda, p, kernel, rows, sequences }) => {
      const pointers = shifted ? { ...p, x: p.shiftedX! + 4n } : p;
      const chosen = shifted ? undefined : kernel;
      runConvCall(cuda, pointers, chosen, layer, rowScale, p.sequences!, sequences, undefined, rows);
    };
  return onThreeLanes(
    `aligned against unaligned x, tensor-core conv ${shapeLabel(layer)}`,
    layer,
    rowScale,
    { aligned: runOf(false), unaligned: runOf(true) },
    (drawn) => {
      const shiftedX = new Float32Array(drawn.x.length + 1);
      shiftedX.set(drawn.x, 1);
      return { shiftedX };
    },
  );
}

/**
 * The tensor-core conv reading its inputs staged once for the call against staging them in each block: the same
 * bytes. A conv or staging control runs in the staged run.
 */
function stagedAgainstInKernel(layer: ConvLayer, rowScale: number): EquivalenceCase {
  const stagedLayer = { ...layer, staged: true };
  const runOf =
    (staged: boolean): ThreeLaneRun =>
    ({ cuda, p, kernel, rows, sequences }) => {
      const call = staged ? stagedLayer : { ...layer, staged: false };
      runConvCall(cuda, p, staged ? kernel : undefined, call, rowScale, p.sequences!, sequences, undefined, rows);
    };
  return onThreeLanes(
    `inputs staged once against staged in each block, tensor-core conv ${shapeLabel(layer)}`,
    stagedLayer,
    rowScale,
    { staged: runOf(true), 'in the conv': runOf(false) },
  );
}

/** Lanes of 2, 1 and 1 units at slots 4, 0, 2 of 5. */
const threeLanes = (rowScale: number): CodecLanes => ({
  slots: 5,
  rowScale,
  sequences: [
    [4, 2],
    [0, 1],
    [2, 1],
  ],
});

/** Every layer (all wider than the narrow kernel's limit) forced onto `variant`: chunked or register-tiled. */
const variantLabel = {
  chunked: '',
  tiled: ', register-tiled',
  mma: ' and inputs, tensor cores',
  'mma-staged': ' and inputs, tensor cores, inputs staged once a call',
};

function convCaseOf(precision: CodecPrecision, kind: 'chunked' | 'tiled' | 'mma' | 'mma-staged'): KernelCase {
  const staged = kind === 'mma-staged';
  const variant = staged ? 'mma' : kind;
  const layerOf = (shape: Parameters<typeof plainLayerOf>[0]): ConvLayer => ({
    ...plainLayerOf(shape),
    variant,
    ...(staged ? { staged } : {}),
  });
  // The reference cannot round the device's Snake values to fp16 as the tensor-core conv does (a value within a few
  // ulps of an fp16 rounding boundary may round the other way), so f16's accuracy shapes take their inputs without
  // Snake; its equivalences, which hold the device to itself, keep it.
  const snake = precision !== 'f16';
  const first = layerOf({ inputs: 1024, outputs: 1536, kernel: 7, precision });
  const dilatedSnake = layerOf({ inputs: 768, outputs: 768, kernel: 7, dilation: 9, snake: true, precision });
  const dilated = layerOf({ inputs: 768, outputs: 768, kernel: 7, dilation: 9, snake, precision });
  const pointwiseSnake = layerOf({ inputs: 768, outputs: 768, kernel: 1, snake: true, residual: true, precision });
  const pointwise = layerOf({ inputs: 768, outputs: 768, kernel: 1, snake, residual: true, precision });
  const oddSnake = layerOf({ inputs: 37, outputs: 45, kernel: 5, dilation: 3, snake: true, xStride: 41, precision });
  const odd = layerOf({ inputs: 37, outputs: 45, kernel: 5, dilation: 3, snake, xStride: 41, precision });
  const small = layerOf({ inputs: 192, outputs: 192, kernel: 7, dilation: 9, snake: true, precision });
  const expand = layerOf({ inputs: 1024, outputs: 4096, kernel: 1, activation: 'gelu', precision });
  const project = layerOf({ inputs: 4096, outputs: 1024, kernel: 1, residual: true, scale: true, precision });
  const unbiased = layerOf({ inputs: 1024, outputs: 1024, kernel: 1, bias: false, precision });
  const oddLinear = layerOf({ inputs: 45, outputs: 37, kernel: 1, bias: false, scale: true, xStride: 50, precision });
  // The encoder's first conv (one input channel) and a down conv regrouped (strided-conv.ts): block 3's, 8 × 256 → 512.
  const encoderFirst = layerOf({ inputs: 1, outputs: 64, kernel: 7, precision });
  const encoderDown = layerOf({ inputs: 2048, outputs: 512, kernel: 2, snake, precision });
  // The encoder's first blocks at 64 channels, which the tensor-core conv runs in its tall block (256 rows × 64).
  const encoderResidual = layerOf({ inputs: 64, outputs: 64, kernel: 7, dilation: 9, snake, precision });
  const encoderPointwise = layerOf({ inputs: 64, outputs: 64, kernel: 1, snake, residual: true, precision });
  const tallSnake = layerOf({ inputs: 192, outputs: 64, kernel: 7, dilation: 3, snake: true, precision });
  const tallPointwiseSnake = layerOf({ inputs: 160, outputs: 48, kernel: 1, snake: true, precision });
  return {
    name: `codec causal conv with carried history, ${precision} weights${variantLabel[kind]}`,
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
      convShape(`residual conv${snake ? ' + Snake' : ''}, 1 lane × 1 frame, real`, dilated, {
        slots: 2,
        rowScale: 32,
        sequences: [[1, 1]],
      }),
      convShape(`pointwise conv${snake ? ' + Snake' : ''} + residual, lanes of 5, 1, 2 frames, real`, pointwise, {
        slots: 6,
        rowScale: 32,
        sequences: [
          [4, 5],
          [0, 1],
          [2, 2],
        ],
      }),
      convShape('ConvNeXt pwconv1 + GELU, lanes of 2, 1, 1 frames, real', expand, threeLanes(2)),
      convShape('ConvNeXt pwconv2 + γ + residual, lanes of 2, 1, 1 frames, real', project, threeLanes(2)),
      convShape('linear without bias, lanes of 2, 1, 1 frames', unbiased, threeLanes(3)),
      convShape('odd linear without bias, γ and no residual', oddLinear, threeLanes(3)),
      convShape('encoder first conv 1 → 64, 1 lane × 1 frame, real', encoderFirst, {
        slots: 2,
        rowScale: 2048,
        sequences: [[1, 1]],
      }),
      convShape(`encoder down conv regrouped${snake ? ' + Snake' : ''}, 1 lane × 1 frame, real`, encoderDown, {
        slots: 1,
        rowScale: 4,
        sequences: [[0, 1]],
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
      ...(variant === 'mma'
        ? [
            convShape('encoder residual conv, tall block, lanes of 2, 1, 1 units', encoderResidual, threeLanes(300)),
            convShape('encoder pointwise conv + residual, tall block, 3 lanes', encoderPointwise, threeLanes(300)),
          ]
        : []),
    ],
    invariance: [
      convInvariance('decode lanes of 4 rows, residual conv + Snake, real', dilatedSnake, 4),
      ...(variant === 'mma' ? [convInvariance('decode lanes of 4 rows, tall block + Snake', tallSnake, 4)] : []),
    ],
    equivalences: [
      ...convSchedules(small, 8, 45),
      ...(variant === 'mma'
        ? [
            splitAgainstUnsplit(dilatedSnake, 16),
            splitAgainstUnsplit(pointwiseSnake, 16),
            splitAgainstUnsplit(first, 4),
            splitAgainstUnsplit(oddSnake, 9),
            splitAgainstUnsplit(expand, 2),
            splitAgainstUnsplit(tallSnake, 40),
            splitAgainstUnsplit(tallPointwiseSnake, 40),
            rawAgainstDirect(dilatedSnake, 16),
            rawAgainstDirect(tallSnake, 100),
            rawAgainstDirect(tallPointwiseSnake, 40),
            ...(staged
              ? [
                  stagedAgainstInKernel(dilatedSnake, 16),
                  stagedAgainstInKernel(first, 4),
                  stagedAgainstInKernel(oddSnake, 9),
                  stagedAgainstInKernel(tallSnake, 100),
                  stagedAgainstInKernel(tallPointwiseSnake, 40),
                ]
              : []),
          ]
        : []),
      ...(variant === 'tiled'
        ? [
            againstChunked(dilatedSnake, 32, 'tiled'),
            againstChunked(oddSnake, 9, 'tiled'),
            againstChunked(pointwiseSnake, 40, 'tiled'),
          ]
        : []),
    ],
  };
}

/** The narrow kernel's layers (at most 8 outputs): the decoder's last conv and an odd one with every epilogue step. */
function narrowCaseOf(precision: CodecPrecision): KernelCase {
  const layerOf = plainLayerOf;
  const last = layerOf({ inputs: 96, outputs: 1, kernel: 7, snake: true, activation: 'tanh', precision });
  const odd = layerOf({
    ...{ inputs: 37, outputs: 3, kernel: 5, dilation: 3, snake: true, residual: true, scale: true },
    ...{ activation: 'gelu', xStride: 41, precision },
  });
  return {
    name: `codec causal conv, narrow kernel (at most 8 outputs), ${precision} weights`,
    bound: CONV_BOUND,
    ulps: CONV_ULPS,
    shapes: [
      convShape('last conv + Snake + tanh, lanes of 2, 1, 1 frames, real', last, threeLanes(2048)),
      convShape('odd sizes + Snake, γ + residual, GELU', odd, threeLanes(7)),
    ],
    invariance: [convInvariance('decode lanes of 64 rows, last conv + Snake + tanh, real', last, 64)],
    equivalences: [
      ...convSchedules(last, 16, 45),
      againstChunked(last, 512, 'narrow'),
      againstChunked(odd, 9, 'narrow'),
    ],
  };
}

export const codecConvCase = convCaseOf('f32', 'chunked');
export const codecConvF16Case = convCaseOf('f16-weights', 'chunked');
export const codecConvTiledCase = convCaseOf('f32', 'tiled');
export const codecConvTiledF16Case = convCaseOf('f16-weights', 'tiled');
export const codecConvMmaCase = convCaseOf('f16', 'mma');
export const codecConvMmaStagedCase = convCaseOf('f16', 'mma-staged');
export const codecNarrowConvCase = narrowCaseOf('f32');
export const codecNarrowConvF16Case = narrowCaseOf('f16-weights');
