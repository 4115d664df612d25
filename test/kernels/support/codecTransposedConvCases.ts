// Contract cases for the codec's causal transposed conv (upsampling by its stride) with Snake on its input and its
// carried rows (kernels/cuda/codec_conv.cu) against the cpu codec's CausalTransposedConv and Snake per lane: the
// decoder blocks' real shapes (1536→768 k16 s8, 192→96 k4 s2), the quantizer's upsample (1024, k2 s2, nothing
// carried), odd sizes with a kernel that is not a multiple of its stride; fp32 and fp16 weights; a lane whole and in
// chunks of 1, 4, 32 and irregular ones.
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import {
  type CodecPrecision,
  type CodecTransposedVariant,
  codecHistoryUpdate,
  codecTransposedConv,
  transposedHistoryRows,
} from '../../../src/backend/cuda/ops/codecConv.ts';
import {
  codecTransposedAsConvLayout,
  codecTransposedWeightLayout,
  repeatedBias,
} from '../../../src/backend/cuda/ops/codecWeightLayout.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import {
  type CodecLanes,
  convWeights,
  cpuSnake,
  cpuTransposedConv,
  deviceWeights,
  keptHistory,
  lanesOfThreeOneTwo,
  lanesTable,
  longestUnits,
  referenceInputs,
  referenceWeights,
  snakeAlpha,
  widen,
} from './codecCases.ts';
import { outGates } from './codecConvLayers.ts';
import { SNAKE_BOUND, SNAKE_ULPS } from './codecSnakeCases.ts';
import type { EquivalenceCase, HostInput, KernelCase, OutputSpec, Prepared, ShapeCase } from './contract.ts';
import { copySlab, lanes, type Sequences } from './deltaNetCases.ts';
import { type Random, randomFloat32, streamOf } from './random.ts';

interface TransposedLayer {
  readonly inputs: number;
  readonly outputs: number;
  readonly kernel: number;
  readonly stride: number;
  readonly snake: boolean;
  readonly precision: CodecPrecision;
  /** The kernel to force (default: the launcher's choice). */
  readonly variant?: CodecTransposedVariant;
}

/** fp32 sums of up to 1536·2 products in chunks of 32 channels (codecConvCases' bound). */
const TRANSPOSED_BOUND = 2e-6;
const TRANSPOSED_ULPS = 32;

const historyRowsOf = (layer: TransposedLayer) => transposedHistoryRows(layer.kernel, layer.stride);

function transposedInputs(layer: TransposedLayer, slots: number, rows: number, draw: (index: number) => Random) {
  const { inputs, outputs, kernel, stride } = layer;
  return {
    weight: convWeights(draw(0), inputs * outputs * kernel, (inputs * kernel) / stride),
    bias: randomFloat32(draw(1), outputs, 0.1),
    alpha: layer.snake ? snakeAlpha(draw(2), inputs) : undefined,
    history: randomFloat32(draw(3), slots * historyRowsOf(layer) * inputs, 1),
    x: randomFloat32(draw(4), rows * inputs, 1),
  };
}

type TransposedInputs = ReturnType<typeof transposedInputs>;

function deviceInputs(layer: TransposedLayer, drawn: TransposedInputs): Record<string, HostInput> {
  const { inputs, outputs, kernel, stride } = layer;
  // Tensor cores run it as the conv it is (codecConv.ts transposedOnTensorCores), with its weights laid out so.
  const asConv = layer.precision === 'f16';
  const laid = asConv
    ? codecTransposedAsConvLayout(drawn.weight, inputs, outputs, kernel, stride)
    : codecTransposedWeightLayout(drawn.weight, inputs, outputs, kernel);
  const values: Record<string, HostInput> = {
    weight: deviceWeights(laid, layer.precision),
    bias: asConv ? repeatedBias(drawn.bias, stride) : drawn.bias,
    x: drawn.x,
  };
  if (drawn.alpha) values.alpha = drawn.alpha;
  if (historyRowsOf(layer) > 0) values.history = drawn.history;
  return values;
}

function transposedOutputs(layer: TransposedLayer, slots: number, rows: number): OutputSpec[] {
  // On tensor cores a transposed conv is the conv of its input rows with K / s taps (outGates).
  const gates = outGates(layer.precision, layer.inputs, layer.kernel / layer.stride);
  const count = rows * layer.stride * layer.outputs;
  const outputs: OutputSpec[] = [{ name: 'out', kind: 'f32', count, ulpFloor: 1, ...gates }];
  const historyCount = slots * historyRowsOf(layer) * layer.inputs;
  const [bound, ulps] = layer.snake ? [SNAKE_BOUND, SNAKE_ULPS] : [0, 0];
  if (historyCount > 0) {
    outputs.push({ name: 'historyOut', kind: 'f32', count: historyCount, bound, ulps, ulpFloor: 1 });
  }
  return outputs;
}

function runTransposedCall(
  cuda: CudaContext,
  p: Readonly<Record<string, bigint>>,
  kernel: KernelName | undefined,
  layer: TransposedLayer,
  rowScale: number,
  table: bigint,
  sequences: Sequences,
): void {
  const { inputs, outputs, stride } = layer;
  const historyRows = historyRowsOf(layer);
  const history = historyRows > 0 ? p.historyOut! : p.x!;
  const call = {
    sequences: table,
    sequenceCount: sequences.length,
    longestSequence: longestUnits(sequences),
    rowScale,
  };
  const convolution = { out: p.out!, outStride: outputs, x: p.x!, xStride: inputs, weight: p.weight!, bias: p.bias! };
  const sizes = { inputs, outputs, kernel: layer.kernel, stride, precision: layer.precision, variant: layer.variant };
  codecTransposedConv(cuda, { ...call, ...convolution, ...sizes, alpha: p.alpha, history }, { kernel });
  if (historyRows === 0) return;
  const update = { history, x: p.x!, xStride: inputs, alpha: p.alpha, channels: inputs, historyRows };
  codecHistoryUpdate(cuda, { ...update, ...call });
}

function transposedReference(layer: TransposedLayer, lanesOf: CodecLanes, drawn: TransposedInputs) {
  const { inputs, outputs, stride } = layer;
  const historyRows = historyRowsOf(layer);
  const { firsts, units } = lanesTable(lanesOf);
  const out = new Float32Array(units * lanesOf.rowScale * stride * outputs);
  const historyOut = Float32Array.from(drawn.history);
  const weight = referenceWeights(drawn.weight, layer.precision);
  lanesOf.sequences.forEach(([slot, laneUnits], index) => {
    const first = firsts[index]! * lanesOf.rowScale;
    const rows = laneUnits * lanesOf.rowScale;
    const snaked = cpuSnake(drawn.x.slice(first * inputs, (first + rows) * inputs), rows, inputs, drawn.alpha);
    const slab = drawn.history.subarray(slot * historyRows * inputs, (slot + 1) * historyRows * inputs);
    const seen = (values: Float32Array) => referenceInputs(values, layer.precision);
    const y = cpuTransposedConv(layer, weight, drawn.bias, seen(slab), historyRows, seen(snaked), rows);
    out.set(y, first * stride * outputs);
    historyOut.set(keptHistory(slab, snaked, historyRows, inputs), slot * historyRows * inputs);
  });
  return { out: widen(out), historyOut: widen(historyOut) };
}

function transposedPrepared(
  layer: TransposedLayer,
  lanesOf: CodecLanes,
  draw: (index: number) => Random,
  nonFinite: boolean,
): Prepared {
  const { table, units } = lanesTable(lanesOf);
  const rows = units * lanesOf.rowScale;
  const drawn = transposedInputs(layer, lanesOf.slots, rows, draw);
  const historyRows = historyRowsOf(layer);
  if (nonFinite) {
    drawn.x[1] = Number.NaN;
    drawn.x[rows * layer.inputs - 1] = Number.NEGATIVE_INFINITY;
    const slot = lanesOf.sequences[0]![0];
    if (historyRows > 0)
      drawn.history[(slot * historyRows + historyRows - 1) * layer.inputs + 2] = Number.POSITIVE_INFINITY;
  }
  const historyBytes = drawn.history.length * 4;
  return {
    inputs: { ...deviceInputs(layer, drawn), sequences: table },
    outputs: transposedOutputs(layer, lanesOf.slots, rows),
    reference: () => transposedReference(layer, lanesOf, drawn),
    run(cuda, p, kernel) {
      if (historyBytes > 0) copySlab(cuda, p.historyOut!, p.history!, historyBytes);
      runTransposedCall(cuda, p, kernel, layer, lanesOf.rowScale, p.sequences!, lanesOf.sequences);
    },
  };
}

function transposedShape(label: string, layer: TransposedLayer, lanesOf: CodecLanes): ShapeCase {
  const { inputs, outputs, kernel, stride } = layer;
  return {
    label: `${label} [${inputs}→${outputs} k${kernel} s${stride}, ${lanesOf.sequences.length} lanes × ${lanesOf.rowScale} rows per unit]`,
    prepare: (random, nonFinite) => transposedPrepared(layer, lanesOf, () => random, nonFinite),
  };
}

type Schedule = (cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) => void;

/** One lane (slot 1 of 3) of `units` units decoded whole and in chunks of 1, 4, 32 and irregular ones. */
function transposedChunking(layer: TransposedLayer, rowScale: number, units: number): EquivalenceCase {
  const chunkings = { whole: [units], 'chunks of 1': [1], 'chunks of 4': [4], 'chunks of 32': [32] };
  const sizes: Record<string, readonly number[]> = { ...chunkings, irregular: [3, 1, 7, 2, 13, 5, 1, 1, 9] };
  return {
    label: `one lane of ${units} units × ${rowScale} rows, ${layer.inputs}→${layer.outputs} k${layer.kernel} s${layer.stride}`,
    prepare(random) {
      const drawn = transposedInputs(layer, 3, units * rowScale, () => random);
      const tables: Record<string, HostInput> = {};
      const runs: Record<string, Schedule> = {};
      for (const [name, cut] of Object.entries(sizes)) {
        const entries: [number, number][] = [];
        for (let start = 0, index = 0; start < units; index++) {
          const size = Math.min(cut[index % cut.length]!, units - start);
          entries.push([1, size]);
          start += size;
        }
        tables[`table ${name}`] = lanesTable({ slots: 3, rowScale, sequences: entries }).table;
        runs[name] = (cuda, p, kernel) => {
          copySlab(cuda, p.historyOut!, p.history!, drawn.history.length * 4);
          entries.forEach((entry, index) => {
            const table = p[`table ${name}`]! + BigInt(index * 16);
            runTransposedCall(cuda, p, kernel, layer, rowScale, table, [entry]);
          });
        };
      }
      const outputs = transposedOutputs(layer, 3, units * rowScale);
      return { inputs: { ...deviceInputs(layer, drawn), ...tables }, outputs, runs };
    },
  };
}

/** Two kernels (forced) on the same lanes of 3, 1 and 2 units from the same slabs: the same bytes. */
function variantsAgree(layer: TransposedLayer, rowScale: number): EquivalenceCase {
  const lanesOf = lanesOfThreeOneTwo(rowScale);
  const { table, units } = lanesTable(lanesOf);
  const runOf =
    (variant: CodecTransposedVariant): Schedule =>
    (cuda, p, kernel) => {
      const historyBytes = lanesOf.slots * historyRowsOf(layer) * layer.inputs * 4;
      if (historyBytes > 0) copySlab(cuda, p.historyOut!, p.history!, historyBytes);
      // The chunked run is always the real kernel: a tiled control is held to its bytes.
      const chosen = variant === 'tiled' ? kernel : undefined;
      runTransposedCall(cuda, p, chosen, { ...layer, variant }, rowScale, p.sequences!, lanesOf.sequences);
    };
  return {
    label: `tiled against chunked kernel, ${layer.inputs}→${layer.outputs} k${layer.kernel} s${layer.stride}, lanes of 3, 1, 2 units × ${rowScale} rows`,
    prepare(random) {
      const drawn = transposedInputs(layer, lanesOf.slots, units * rowScale, () => random);
      return {
        inputs: { ...deviceInputs(layer, drawn), sequences: table },
        outputs: transposedOutputs(layer, lanesOf.slots, units * rowScale),
        runs: { tiled: runOf('tiled'), chunked: runOf('chunked') },
      };
    },
  };
}

/**
 * Every layer forced onto `variant`. The tiled kernel needs a stride dividing 8 and its kernel, so its case draws its
 * odd sizes from such a layer (the chunked case keeps one whose kernel is not a multiple of its stride).
 */
function transposedCaseOf(precision: CodecPrecision, variant: CodecTransposedVariant): KernelCase {
  const layerOf = (shape: Omit<TransposedLayer, 'precision' | 'variant'>): TransposedLayer => ({
    ...shape,
    precision,
    variant,
  });
  // f16's accuracy shapes take their inputs without Snake (codecConvCases.ts says why); its equivalences keep it.
  const snake = precision !== 'f16';
  const first = layerOf({ inputs: 1536, outputs: 768, kernel: 16, stride: 8, snake });
  const fourth = layerOf({ inputs: 192, outputs: 96, kernel: 4, stride: 2, snake });
  const upsample = layerOf({ inputs: 1024, outputs: 1024, kernel: 2, stride: 2, snake: false });
  // The tensor-core conv too needs the stride to divide the kernel.
  const odd =
    variant === 'tiled' || precision === 'f16'
      ? layerOf({ inputs: 37, outputs: 45, kernel: 8, stride: 4, snake })
      : layerOf({ inputs: 37, outputs: 45, kernel: 7, stride: 3, snake: true });
  const third = layerOf({ inputs: 384, outputs: 192, kernel: 8, stride: 4, snake: true });
  return {
    name: `codec causal transposed conv with carried rows, ${precision} weights${precision === 'f16' ? ' and inputs, tensor cores' : variant === 'tiled' ? ', register-tiled' : ''}`,
    bound: TRANSPOSED_BOUND,
    ulps: TRANSPOSED_ULPS,
    shapes: [
      transposedShape('decoder block 1, 1 lane × 1 frame, real', first, { slots: 2, rowScale: 4, sequences: [[1, 1]] }),
      transposedShape('decoder block 4, lanes of 1 and 2 frames, real', fourth, {
        slots: 3,
        rowScale: 256,
        sequences: [
          [2, 1],
          [0, 2],
        ],
      }),
      transposedShape('quantizer upsample, 3 lanes × 1 frame, real', upsample, {
        slots: 3,
        rowScale: 1,
        sequences: [
          [0, 1],
          [2, 1],
          [1, 1],
        ],
      }),
      transposedShape('odd sizes, lanes of 5, 1, 2 units', odd, {
        slots: 5,
        rowScale: 2,
        sequences: [
          [4, 5],
          [0, 1],
          [2, 2],
        ],
      }),
    ],
    invariance: [
      {
        label: 'decode lanes of 32 rows, decoder block 3, real',
        prepare: (seed, count) =>
          transposedPrepared(
            third,
            { slots: count, rowScale: 32, sequences: lanes(count) },
            (index) => streamOf(seed, index),
            false,
          ),
        elementsPerRow: { out: 32 * third.stride * third.outputs, historyOut: historyRowsOf(third) * third.inputs },
      },
    ],
    equivalences: [
      transposedChunking(third, 4, 45),
      transposedChunking(odd, 2, 40),
      ...(variant === 'tiled' ? [variantsAgree(first, 4), variantsAgree(fourth, 64), variantsAgree(upsample, 2)] : []),
    ],
  };
}

export const codecTransposedConvCase = transposedCaseOf('f32', 'chunked');
export const codecTransposedConvF16Case = transposedCaseOf('f16-weights', 'chunked');
export const codecTransposedConvTiledCase = transposedCaseOf('f32', 'tiled');
export const codecTransposedConvTiledF16Case = transposedCaseOf('f16-weights', 'tiled');
/** `f16` runs on the tensor-core conv whatever variant is named. */
export const codecTransposedConvMmaCase = transposedCaseOf('f16', 'chunked');
