// Contract case for a whole DAC decoder block as one launch sequence (kernels/cuda/codec_conv.cu): Snake + causal
// transposed conv, then three residual units (Snake, conv k7 at dilations 1, 3, 9, Snake, conv k1, + input), every
// layer carrying its own history slab by slot. Its accuracy shape holds a fresh lane against the cpu codec's own
// layers (src/codec/conv.ts) built as decoder.ts builds them; its equivalences hold contract 5 through the stack:
// a lane decoded whole equals it decoded in chunks of 1, 4, 32 and irregular frames, and lanes together equal
// lanes alone, bit for bit.
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import {
  codecConv,
  codecHistoryUpdate,
  codecTransposedConv,
  transposedHistoryRows,
} from '../../../src/backend/cuda/ops/codecConv.ts';
import { codecConvWeightLayout, codecTransposedWeightLayout } from '../../../src/backend/cuda/ops/codecWeightLayout.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import { RESIDUAL_DILATIONS } from '../../../src/codec/blocks.ts';
import { CausalConv, CausalTransposedConv, Snake } from '../../../src/codec/conv.ts';
import { ScratchArena } from '../../../src/codec/scratch.ts';
import {
  type CodecLanes,
  channelsFirst,
  convWeights,
  lanesTable,
  longestUnits,
  rowsFirst,
  snakeAlpha,
  widen,
} from './codecCases.ts';
import type { EquivalenceCase, HostInput, KernelCase, OutputSpec, Prepared } from './contract.ts';
import { copySlab, type Sequences } from './deltaNetCases.ts';
import { type Random, randomFloat32 } from './random.ts';

/** A small decoder block: 64 → 32 channels, rate 4 (k8 s4), at 2 input rows per frame. */
const BLOCK = { inputs: 64, outputs: 32, rate: 4, rowsPerFrame: 2 } as const;
const UNIT_KERNEL = 7;
const TRANSPOSED_HISTORY = transposedHistoryRows(2 * BLOCK.rate, BLOCK.rate);
/** Seven fp32 convs and four Snakes in a row: each conv's few ulps, carried through the residual sums. */
const STACK_BOUND = 1e-5;
const STACK_ULPS = 64;

type Schedule = (cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) => void;

function blockWeights(random: Random) {
  const { inputs, outputs, rate } = BLOCK;
  const units = RESIDUAL_DILATIONS.map(() => ({
    firstAlpha: snakeAlpha(random, outputs),
    dilated: convWeights(random, outputs * outputs * UNIT_KERNEL, outputs * UNIT_KERNEL),
    dilatedBias: randomFloat32(random, outputs, 0.1),
    secondAlpha: snakeAlpha(random, outputs),
    pointwise: convWeights(random, outputs * outputs, outputs),
    pointwiseBias: randomFloat32(random, outputs, 0.1),
  }));
  return {
    alpha: snakeAlpha(random, inputs),
    transposed: convWeights(random, inputs * outputs * 2 * rate, inputs * 2),
    transposedBias: randomFloat32(random, outputs, 0.1),
    units,
  };
}

type BlockWeights = ReturnType<typeof blockWeights>;

function deviceWeights(weights: BlockWeights): Record<string, HostInput> {
  const { inputs, outputs, rate } = BLOCK;
  const values: Record<string, HostInput> = {
    alpha: weights.alpha,
    transposed: codecTransposedWeightLayout(weights.transposed, inputs, outputs, 2 * rate),
    transposedBias: weights.transposedBias,
  };
  weights.units.forEach((unit, index) => {
    values[`firstAlpha${index}`] = unit.firstAlpha;
    values[`dilated${index}`] = codecConvWeightLayout(unit.dilated, outputs, outputs, UNIT_KERNEL);
    values[`dilatedBias${index}`] = unit.dilatedBias;
    values[`secondAlpha${index}`] = unit.secondAlpha;
    values[`pointwise${index}`] = codecConvWeightLayout(unit.pointwise, outputs, outputs, 1);
    values[`pointwiseBias${index}`] = unit.pointwiseBias;
  });
  return values;
}

const slabSizes = (slots: number) => [
  slots * TRANSPOSED_HISTORY * BLOCK.inputs,
  ...RESIDUAL_DILATIONS.map((dilation) => slots * (UNIT_KERNEL - 1) * dilation * BLOCK.outputs),
];

function blockOutputs(slots: number, frames: number): OutputSpec[] {
  const rows = frames * BLOCK.rowsPerFrame * BLOCK.rate;
  const outputs: OutputSpec[] = [{ name: 'out', kind: 'f32', count: rows * BLOCK.outputs, ulpFloor: 1 }];
  slabSizes(slots).forEach((count, index) => {
    outputs.push({ name: `historyOut${index}`, kind: 'f32', count, ulpFloor: 1 });
  });
  // Each unit's output and its dilated conv's: scratch rows between launches, compared as outputs too.
  for (let unit = 0; unit < RESIDUAL_DILATIONS.length; unit++) {
    outputs.push({ name: `mixed${unit}`, kind: 'f32', count: rows * BLOCK.outputs, ulpFloor: 1 });
    if (unit + 1 < RESIDUAL_DILATIONS.length) {
      outputs.push({ name: `unit${unit}`, kind: 'f32', count: rows * BLOCK.outputs, ulpFloor: 1 });
    }
  }
  outputs.push({ name: 'upsampled', kind: 'f32', count: rows * BLOCK.outputs, ulpFloor: 1 });
  return outputs;
}

/** The decoder block's launches for one call of `sequences` (table at `table`). */
function runBlock(cuda: CudaContext, p: Readonly<Record<string, bigint>>, table: bigint, sequences: Sequences): void {
  const { inputs, outputs, rate, rowsPerFrame } = BLOCK;
  const call = { sequences: table, sequenceCount: sequences.length, longestSequence: longestUnits(sequences) };
  const upsample = { ...call, rowScale: rowsPerFrame, precision: 'f32' as const };
  codecTransposedConv(cuda, {
    ...upsample,
    out: p.upsampled!,
    outStride: outputs,
    x: p.x!,
    xStride: inputs,
    weight: p.transposed!,
    bias: p.transposedBias!,
    alpha: p.alpha!,
    history: p.historyOut0!,
    inputs,
    outputs,
    kernel: 2 * rate,
    stride: rate,
  });
  const transposedUpdate = { history: p.historyOut0!, x: p.x!, xStride: inputs, alpha: p.alpha! };
  codecHistoryUpdate(cuda, { ...upsample, ...transposedUpdate, channels: inputs, historyRows: TRANSPOSED_HISTORY });
  const unitCall = { ...call, rowScale: rowsPerFrame * rate, precision: 'f32' as const };
  const square = { inputs: outputs, outputs, outStride: outputs, xStride: outputs };
  let x = p.upsampled!;
  RESIDUAL_DILATIONS.forEach((dilation, unit) => {
    const history = p[`historyOut${unit + 1}`]!;
    const mixed = p[`mixed${unit}`]!;
    const alpha = p[`firstAlpha${unit}`]!;
    const dilated = { weight: p[`dilated${unit}`]!, bias: p[`dilatedBias${unit}`]!, kernel: UNIT_KERNEL, dilation };
    codecConv(cuda, { ...unitCall, ...square, ...dilated, out: mixed, x, alpha, history });
    const historyRows = (UNIT_KERNEL - 1) * dilation;
    codecHistoryUpdate(cuda, { ...unitCall, history, x, xStride: outputs, alpha, channels: outputs, historyRows });
    const out = unit + 1 < RESIDUAL_DILATIONS.length ? p[`unit${unit}`]! : p.out!;
    const pointwise = { weight: p[`pointwise${unit}`]!, bias: p[`pointwiseBias${unit}`]!, kernel: 1, dilation: 1 };
    const residual = { residual: x, residualStride: outputs, alpha: p[`secondAlpha${unit}`]! };
    // A k1 conv carries nothing: its history argument is never read.
    codecConv(cuda, { ...unitCall, ...square, ...pointwise, ...residual, out, x: mixed, history: mixed });
    x = out;
  });
}

/**
 * A fresh lane through the cpu codec's layers, step by step as decoder.ts's decoderBlock and ResidualUnit run them:
 * every output the launch sequence writes, rows-first (the slabs: the last rows each conv read, after Snake).
 */
function cpuBlock(weights: BlockWeights, x: Float32Array, rows: number): Record<string, Float64Array> {
  const { inputs, outputs, rate } = BLOCK;
  const scratch = new ScratchArena();
  const upsample = new CausalTransposedConv(
    inputs,
    outputs,
    2 * rate,
    rate,
    weights.transposed,
    weights.transposedBias,
  );
  const outRows = rows * rate;
  const last = (values: Float32Array, channels: number, keep: number, total: number) =>
    widen(rowsFirst(values, total, channels).slice((total - keep) * channels));
  const snaked = new Snake(weights.alpha).forward(channelsFirst(x, rows, inputs), rows, scratch);
  const result: Record<string, Float64Array> = { historyOut0: last(snaked, inputs, TRANSPOSED_HISTORY, rows) };
  let y = upsample.forward(snaked, rows, scratch);
  result.upsampled = widen(rowsFirst(y, outRows, outputs));
  weights.units.forEach((unit, index) => {
    const dilation = RESIDUAL_DILATIONS[index]!;
    const first = new Snake(unit.firstAlpha).forward(y, outRows, scratch);
    result[`historyOut${index + 1}`] = last(first, outputs, (UNIT_KERNEL - 1) * dilation, outRows);
    const dilated = new CausalConv(
      { inputs: outputs, outputs, kernel: UNIT_KERNEL, dilation },
      unit.dilated,
      unit.dilatedBias,
    );
    const mixed = dilated.forward(first, outRows, scratch);
    result[`mixed${index}`] = widen(rowsFirst(mixed, outRows, outputs));
    const pointwise = new CausalConv({ inputs: outputs, outputs, kernel: 1 }, unit.pointwise, unit.pointwiseBias);
    const projected = pointwise.forward(new Snake(unit.secondAlpha).forward(mixed, outRows, scratch), outRows, scratch);
    const sum = new Float32Array(y.length);
    for (let row = 0; row < y.length; row++) sum[row] = y[row]! + projected[row]!;
    y = sum;
    const name = index + 1 < RESIDUAL_DILATIONS.length ? `unit${index}` : 'out';
    result[name] = widen(rowsFirst(y, outRows, outputs));
  });
  return result;
}

/** One fresh lane (zero slabs) of `frames` frames against the cpu layers, every written buffer compared. */
function freshLane(frames: number, random: Random, nonFinite: boolean): Prepared {
  const weights = blockWeights(random);
  const rows = frames * BLOCK.rowsPerFrame;
  const x = randomFloat32(random, rows * BLOCK.inputs, 1);
  if (nonFinite) {
    x[3] = Number.NaN;
    x[rows * BLOCK.inputs - 1] = Number.POSITIVE_INFINITY;
  }
  const lanesOf: CodecLanes = { slots: 1, rowScale: BLOCK.rowsPerFrame, sequences: [[0, frames]] };
  const sizes = slabSizes(1);
  const slabs = Object.fromEntries(sizes.map((count, index) => [`history${index}`, new Float32Array(count)]));
  return {
    inputs: { ...deviceWeights(weights), ...slabs, x, sequences: lanesTable(lanesOf).table },
    outputs: blockOutputs(1, frames),
    reference: () => cpuBlock(weights, x, rows),
    run(cuda, p) {
      copySlabs(cuda, p, 1);
      runBlock(cuda, p, p.sequences!, lanesOf.sequences);
    },
  };
}

/** Every layer's slab from its starting values (history<i>) into the one the launches update (historyOut<i>). */
function copySlabs(cuda: CudaContext, p: Readonly<Record<string, bigint>>, slots: number): void {
  slabSizes(slots).forEach((count, index) => {
    copySlab(cuda, p[`historyOut${index}`]!, p[`history${index}`]!, count * 4);
  });
}

function cut(frames: number, sizes: readonly number[], slot: number): [number, number][] {
  const entries: [number, number][] = [];
  for (let start = 0, index = 0; start < frames; index++) {
    const size = Math.min(sizes[index % sizes.length]!, frames - start);
    entries.push([slot, size]);
    start += size;
  }
  return entries;
}

/** Schedules of one set of lanes: each call a run of consecutive table entries, from the same starting slabs. */
function equivalence(
  label: string,
  slots: number,
  frames: number,
  tables: Record<string, Sequences>,
  calls: Record<string, readonly (readonly [string, number, number])[]>,
): EquivalenceCase {
  return {
    label,
    prepare(random) {
      const weights = blockWeights(random);
      const x = randomFloat32(random, frames * BLOCK.rowsPerFrame * BLOCK.inputs, 1);
      const slabs = Object.fromEntries(
        slabSizes(slots).map((count, index) => [`history${index}`, randomFloat32(random, count, 1)]),
      );
      const tableInputs = Object.fromEntries(
        Object.entries(tables).map(([name, sequences]) => [name, lanesTable({ slots, rowScale: 1, sequences }).table]),
      );
      const runs: Record<string, Schedule> = {};
      for (const [name, list] of Object.entries(calls)) {
        runs[name] = (cuda, p) => {
          copySlabs(cuda, p, slots);
          for (const [table, entry, count] of list) {
            runBlock(cuda, p, p[table]! + BigInt(entry * 16), tables[table]!.slice(entry, entry + count));
          }
        };
      }
      return {
        inputs: { ...deviceWeights(weights), ...slabs, ...tableInputs, x },
        outputs: blockOutputs(slots, frames),
        runs,
      };
    },
  };
}

function chunked(frames: number): EquivalenceCase {
  const chunkings: Record<string, readonly number[]> = {
    whole: [frames],
    'chunks of 1': [1],
    'chunks of 4': [4],
    'chunks of 32': [32],
    irregular: [3, 1, 7, 2, 13, 5, 1, 1, 9],
  };
  const tables: Record<string, Sequences> = {};
  const calls: Record<string, (readonly [string, number, number])[]> = {};
  for (const [name, sizes] of Object.entries(chunkings)) {
    tables[name] = cut(frames, sizes, 1);
    calls[name] = tables[name]!.map((_, index) => [name, index, 1] as const);
  }
  return equivalence(`one lane of ${frames} frames through the block`, 3, frames, tables, calls);
}

const together: Sequences = [
  [2, 7],
  [0, 1],
  [3, 4],
];

export const codecDecoderBlockCase: KernelCase = {
  name: 'codec decoder block (Snake, transposed conv, 3 residual units) as one launch sequence',
  bound: STACK_BOUND,
  ulps: STACK_ULPS,
  shapes: [
    {
      label: `fresh lane of 9 frames [${BLOCK.inputs}→${BLOCK.outputs}, rate ${BLOCK.rate}]`,
      prepare: (random, nonFinite) => freshLane(9, random, nonFinite),
    },
  ],
  equivalences: [
    chunked(45),
    equivalence(
      'lanes of 7, 1 and 4 frames at slots 2, 0, 3',
      4,
      12,
      { lanes: together },
      {
        together: [['lanes', 0, 3]],
        alone: [
          ['lanes', 0, 1],
          ['lanes', 1, 1],
          ['lanes', 2, 1],
        ],
      },
    ),
  ],
};
