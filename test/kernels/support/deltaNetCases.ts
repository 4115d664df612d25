// Contract cases for the Gated DeltaNet conv + SiLU and gates (kernels/cuda/delta_net.cu) against the cpu ops
// called per sequence, over LAYOUT.md's sequence table and slabs: decode lanes at scattered slots, prefill of 1 to
// 257 rows, odd sizes, the real model's (C = 8192 q|k|v channels read from the 12352-wide projection, Vh = 32).
// The recurrence's cases are in deltaNetRecurrenceCases.ts.
import { sigmoid, softplus } from '../../../src/backend/cpu/ops/activations.ts';
import { causalConv1dSilu } from '../../../src/backend/cpu/ops/conv.ts';
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import { DELTA_NET_CONV_WIDTH, deltaNetConv, deltaNetGates } from '../../../src/backend/cuda/ops/deltaNet.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import { roundToBf16 } from '../../../src/numeric/dtypes.ts';
import {
  BF16_ONE_ROUNDING_BOUND,
  type EquivalenceCase,
  type KernelCase,
  type Prepared,
  type ShapeCase,
} from './contract.ts';
import { plant, type Random, randomBf16, streamOf } from './random.ts';

/** The real model's sizes (MODEL.md §2). */
export const REAL = { keyHeads: 16, valueHeads: 32, headDim: 128, projectionWidth: 12352 } as const;
const REAL_CHANNELS = 2 * REAL.keyHeads * REAL.headDim + REAL.valueHeads * REAL.headDim;
const HISTORY = DELTA_NET_CONV_WIDTH - 1;

/** A call's sequences: each (slot, rows), laid out one after another from row 0. */
export type Sequences = readonly (readonly [slot: number, rows: number])[];

/** The device sequence table int32 [Q, 4] = (slot, firstRow, rowCount, startPosition). */
export function sequenceTable(sequences: Sequences): { table: Int32Array; firsts: number[]; rows: number } {
  const table = new Int32Array(sequences.length * 4);
  const firsts: number[] = [];
  let row = 0;
  sequences.forEach(([slot, count], index) => {
    table.set([slot, row, count, 1000 + row], index * 4);
    firsts.push(row);
    row += count;
  });
  return { table, firsts, rows: row };
}

/** The same single sequence of `rows` rows at `slot`, as one table entry per chunk of `chunk` rows. */
export function chunkTable(slot: number, rows: number, chunk: number): Int32Array {
  const entries: [number, number][] = [];
  for (let start = 0; start < rows; start += chunk) entries.push([slot, Math.min(chunk, rows - start)]);
  return sequenceTable(entries).table;
}

/** Lane i at slot i, one row each: the layout of the invariance cases. */
export function lanes(count: number): Sequences {
  return Array.from({ length: count }, (_, lane) => [lane, 1] as const);
}

function longest(sequences: Sequences): number {
  return Math.max(...sequences.map(([, rows]) => rows));
}

export function copySlab(cuda: CudaContext, target: bigint, source: bigint, bytes: number): void {
  cuda.driver.copyDeviceToDevice(target, source, bytes, cuda.stream);
}

interface ConvLayout {
  readonly channels: number;
  readonly xStride: number;
  readonly slots: number;
  readonly sequences: Sequences;
}

function convInputs(layout: ConvLayout, rows: number, draw: (index: number) => Random) {
  const { channels, xStride, slots } = layout;
  return {
    weight: randomBf16(draw(0), channels * DELTA_NET_CONV_WIDTH, 0.5),
    x: randomBf16(draw(1), rows * xStride, 1),
    convState: randomBf16(draw(2), slots * HISTORY * channels, 1),
  };
}

function runConv(
  cuda: CudaContext,
  p: Readonly<Record<string, bigint>>,
  kernel: KernelName | undefined,
  layout: ConvLayout,
  table: bigint,
  sequences: Sequences,
): void {
  const { channels, xStride } = layout;
  deltaNetConv(
    cuda,
    {
      out: p.out!,
      outRowStride: channels,
      x: p.x!,
      xRowStride: xStride,
      weight: p.weight!,
      convState: p.convStateOut!,
      sequences: table,
      sequenceCount: sequences.length,
      longestSequence: longest(sequences),
      channels,
    },
    { kernel },
  );
}

function convPrepared(layout: ConvLayout, draw: (index: number) => Random, nonFinite: boolean): Prepared {
  const { channels, xStride, slots, sequences } = layout;
  const { table, firsts, rows } = sequenceTable(sequences);
  const { weight, x, convState } = convInputs(layout, rows, draw);
  if (nonFinite) {
    plant(x, 1, Number.NaN);
    plant(convState, (sequences[0]![0] * HISTORY + HISTORY - 1) * channels + 2, Number.POSITIVE_INFINITY);
    plant(x, (rows - 1) * xStride + channels - 1, Number.NEGATIVE_INFINITY);
  }
  const slabCount = slots * HISTORY * channels;
  return {
    inputs: { weight, x, convState, sequences: table },
    outputs: [
      { name: 'out', kind: 'bf16', count: rows * channels },
      { name: 'convStateOut', kind: 'bf16', count: slabCount, bound: 0, ulps: 0 },
    ],
    reference() {
      const out = new Float64Array(rows * channels);
      const convStateOut = Float64Array.from(convState.values);
      sequences.forEach(([slot, count], index) => {
        const input = new Float64Array(count * channels);
        for (let t = 0; t < count; t++) {
          const source = (firsts[index]! + t) * xStride;
          input.set(x.values.subarray(source, source + channels), t * channels);
        }
        const state = convStateOut.subarray(slot * HISTORY * channels, (slot + 1) * HISTORY * channels);
        const result = new Float64Array(count * channels);
        causalConv1dSilu(input, weight.values, state, result, count, channels, DELTA_NET_CONV_WIDTH);
        out.set(result, firsts[index]! * channels);
      });
      return { out, convStateOut };
    },
    run(cuda, p, kernel) {
      copySlab(cuda, p.convStateOut!, p.convState!, slabCount * 2);
      runConv(cuda, p, kernel, layout, p.sequences!, sequences);
    },
  };
}

function convShape(label: string, layout: ConvLayout): ShapeCase {
  return {
    label: `${label} [C ${layout.channels}, x stride ${layout.xStride}, ${layout.sequences.length} sequences]`,
    prepare: (random, nonFinite) => convPrepared(layout, () => random, nonFinite),
  };
}

const realConv = (slots: number, sequences: Sequences): ConvLayout => ({
  channels: REAL_CHANNELS,
  xStride: REAL.projectionWidth,
  slots,
  sequences,
});

function prefillShapes(build: (rows: number) => ShapeCase): ShapeCase[] {
  return [1, 7, 64, 257].map(build);
}

const scattered7 = [9, 0, 4, 15, 2, 7, 11].map((slot) => [slot, 1] as const);
const scattered64 = Array.from({ length: 64 }, (_, lane) => [(lane * 37) % 64, 1] as const);

/** Whole vs chunks of 1, 7 and 64 rows of one sequence, each schedule starting from the same slab. */
function convChunking(rows: number): EquivalenceCase {
  const layout = realConv(3, [[1, rows]]);
  const slabBytes = 3 * HISTORY * REAL_CHANNELS * 2;
  const schedule = (chunk: number) => (cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel?: KernelName) => {
    copySlab(cuda, p.convStateOut!, p.convState!, slabBytes);
    for (let start = 0, index = 0; start < rows; start += chunk, index++) {
      const table = p[`chunks${chunk}`]! + BigInt(index * 16);
      runConv(cuda, p, kernel, layout, table, [[1, Math.min(chunk, rows - start)]]);
    }
  };
  return {
    label: `one sequence of ${rows} rows`,
    prepare(random) {
      const inputs = convInputs(layout, rows, () => random);
      const tables = Object.fromEntries(
        [rows, 1, 7, 64].map((chunk) => [`chunks${chunk}`, chunkTable(1, rows, chunk)]),
      );
      return {
        inputs: { ...inputs, ...tables },
        outputs: [
          { name: 'out', kind: 'bf16', count: rows * REAL_CHANNELS },
          { name: 'convStateOut', kind: 'bf16', count: 3 * HISTORY * REAL_CHANNELS },
        ],
        runs: {
          whole: schedule(rows),
          'chunks of 1': schedule(1),
          'chunks of 7': schedule(7),
          'chunks of 64': schedule(64),
        },
      };
    },
  };
}

export const deltaNetConvCase: KernelCase = {
  name: 'delta_net conv + SiLU with carried state',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    convShape('decode, one lane, real', realConv(4, [[2, 1]])),
    convShape('decode, 7 lanes at scattered slots, real', realConv(16, scattered7)),
    convShape('decode, 64 lanes, real', realConv(64, scattered64)),
    ...prefillShapes((rows) => convShape(`prefill ${rows} rows, real`, realConv(3, [[1, rows]]))),
    convShape('odd sizes, sequences of 5, 1, 2 rows', {
      channels: 999,
      xStride: 1001,
      slots: 5,
      sequences: [
        [4, 5],
        [0, 1],
        [2, 2],
      ],
    }),
  ],
  invariance: [
    {
      label: 'decode lanes, real',
      prepare: (seed, count) => convPrepared(realConv(count, lanes(count)), (index) => streamOf(seed, index), false),
      elementsPerRow: { out: REAL_CHANNELS, convStateOut: HISTORY * REAL_CHANNELS },
    },
  ],
  equivalences: [convChunking(100)],
};

interface GatesLayout {
  readonly rows: number;
  readonly valueHeads: number;
  readonly rowStride: number;
  /** How A_log and dt_bias are stored; fp32 when left out. */
  readonly parameterDtype?: 'bf16';
}

function gatesPrepared(layout: GatesLayout, draw: (index: number) => Random, nonFinite: boolean): Prepared {
  const { rows, valueHeads, rowStride, parameterDtype } = layout;
  const parameters = draw(0);
  // bf16 parameters (as the checkpoint stores them) go up as bf16 words and are widened exactly by the kernel.
  const draw32 = () => Float32Array.from({ length: valueHeads }, () => 0.5 * parameters.normal());
  const aLog = parameterDtype === 'bf16' ? randomBf16(parameters, valueHeads, 0.5) : draw32();
  const dtBias = parameterDtype === 'bf16' ? randomBf16(parameters, valueHeads, 0.5) : draw32();
  const aLogValues = aLog instanceof Float32Array ? aLog : aLog.values;
  const dtBiasValues = dtBias instanceof Float32Array ? dtBias : dtBias.values;
  const projection = randomBf16(draw(1), rows * rowStride, 1);
  // b and a are the last 2·Vh columns of each projection row, as in q|k|v|z|b|a.
  const bColumn = rowStride - 2 * valueHeads;
  const aColumn = rowStride - valueHeads;
  if (nonFinite) {
    plant(projection, bColumn, Number.NaN);
    plant(projection, (rows - 1) * rowStride + aColumn + (1 % valueHeads), Number.POSITIVE_INFINITY);
    plant(projection, aColumn + valueHeads - 1, Number.NEGATIVE_INFINITY);
  }
  return {
    inputs: { projection, aLog, dtBias },
    outputs: [
      { name: 'g', kind: 'f32', count: rows * valueHeads },
      // beta is rounded to bf16 in fp32 storage: where the fp32 and fp64 sigmoids round to neighbouring bf16
      // values the two differ by one bf16 ulp (2¹⁶ fp32 ulps).
      // An unrounded beta is within that bound, so the rounding itself is checked: every beta is a bf16 value.
      {
        name: 'beta',
        kind: 'f32',
        count: rows * valueHeads,
        bound: BF16_ONE_ROUNDING_BOUND,
        ulps: 2 ** 16,
        heldAsBf16: true,
      },
    ],
    reference() {
      const g = new Float64Array(rows * valueHeads);
      const beta = new Float64Array(rows * valueHeads);
      for (let row = 0; row < rows; row++) {
        for (let head = 0; head < valueHeads; head++) {
          const a = projection.values[row * rowStride + aColumn + head]!;
          const b = projection.values[row * rowStride + bColumn + head]!;
          g[row * valueHeads + head] = -Math.exp(aLogValues[head]!) * softplus(a + dtBiasValues[head]!);
          beta[row * valueHeads + head] = roundToBf16(sigmoid(b));
        }
      }
      return { g, beta };
    },
    run(cuda, p, kernel) {
      const b = p.projection! + BigInt(bColumn * 2);
      const a = p.projection! + BigInt(aColumn * 2);
      const pointers = { g: p.g!, beta: p.beta!, b, a, aLog: p.aLog!, dtBias: p.dtBias! };
      const dtype = parameterDtype === undefined ? {} : { parameterDtype };
      deltaNetGates(cuda, { ...pointers, ...dtype, rowStride, rows, valueHeads }, { kernel });
    },
  };
}

function gatesShape(label: string, layout: GatesLayout): ShapeCase {
  return {
    label: `${label} [${layout.rows} rows, ${layout.valueHeads} value heads, stride ${layout.rowStride}]`,
    prepare: (random, nonFinite) => gatesPrepared(layout, () => random, nonFinite),
  };
}

const realGates = (rows: number): GatesLayout => ({
  rows,
  valueHeads: REAL.valueHeads,
  rowStride: REAL.projectionWidth,
});

export const deltaNetGatesCase: KernelCase = {
  name: 'delta_net gates beta = sigmoid(b), g = −exp(A_log)·softplus(a + dt_bias)',
  // fp32 outputs: expf, log1pf and the rounding of a + dt_bias, amplified at most a few times by softplus.
  bound: 2e-6,
  ulps: 16,
  shapes: [
    gatesShape('decode, one row, real', realGates(1)),
    gatesShape('prefill chunk, real', realGates(257)),
    gatesShape('odd sizes', { rows: 13, valueHeads: 5, rowStride: 17 }),
    gatesShape('bf16 A_log and dt_bias, real', { ...realGates(64), parameterDtype: 'bf16' }),
  ],
  invariance: [
    {
      label: 'rows, real',
      prepare: (seed, rows) => gatesPrepared(realGates(rows), (index) => streamOf(seed, index), false),
      elementsPerRow: { g: REAL.valueHeads, beta: REAL.valueHeads },
    },
  ],
};
