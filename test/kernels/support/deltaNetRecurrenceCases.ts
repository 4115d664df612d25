// Contract cases for the gated delta-rule recurrence (kernels/cuda/delta_net.cu) against the cpu op called per
// sequence (fp64): decode batches of 1, 7 and 64 lanes at scattered slots, prefill of 1 to 257 rows, odd head
// counts, the real sizes (Kh 16, Vh 32, Kd = Vd = 128). Outputs are o and the whole updated state slab; the fp32
// state is held to its own bounds.
import { gatedDeltaRecurrent } from '../../../src/backend/cpu/ops/delta-rule.ts';
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import { DELTA_NET_HEAD_DIM, deltaNetRecurrence } from '../../../src/backend/cuda/ops/deltaNet.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import {
  BF16_ONE_ROUNDING_BOUND,
  type EquivalenceCase,
  type KernelCase,
  type OutputSpec,
  type Prepared,
  type ShapeCase,
} from './contract.ts';
import { chunkTable, copySlab, lanes, REAL, type Sequences, sequenceTable } from './deltaNetCases.ts';
import { plant, type Random, randomBf16, randomFloat32, streamOf } from './random.ts';

const D = DELTA_NET_HEAD_DIM;
const HEAD_STATE = D * D;

interface RecurrenceLayout {
  readonly keyHeads: number;
  readonly valueHeads: number;
  /** Elements between rows of the conv output (even, ≥ (2·Kh + Vh)·128). */
  readonly stride: number;
  readonly slots: number;
  readonly sequences: Sequences;
}

function real(slots: number, sequences: Sequences): RecurrenceLayout {
  const stride = (2 * REAL.keyHeads + REAL.valueHeads) * D;
  return { keyHeads: REAL.keyHeads, valueHeads: REAL.valueHeads, stride, slots, sequences };
}

/** Inputs drawn tensor by tensor (each from its own stream where `draw` gives one), so lane prefixes repeat. */
function recurrenceInputs(layout: RecurrenceLayout, rows: number, draw: (index: number) => Random) {
  const { valueHeads, stride, slots } = layout;
  const qkv = randomBf16(draw(0), rows * stride, 1);
  const decays = draw(1);
  // Log decays around −0.2 (per-row decay about 0.8), as −exp(A_log)·softplus(·) gives.
  const g = Float32Array.from({ length: rows * valueHeads }, () => -Math.exp(0.5 * decays.normal() - 1.5));
  const betas = draw(2);
  const beta = Float32Array.from({ length: rows * valueHeads }, () => 1 / (1 + Math.exp(-betas.normal())));
  const state = randomFloat32(draw(3), slots * valueHeads * HEAD_STATE, 0.1);
  return { qkv, g, beta, state };
}

function outputs(layout: RecurrenceLayout, rows: number): OutputSpec[] {
  const stateCount = layout.slots * layout.valueHeads * HEAD_STATE;
  return [
    // One rounding of an fp32 result: the fp32 chain of rows before it stays far below half a bf16 ulp.
    { name: 'out', kind: 'bf16', count: rows * layout.valueHeads * D },
    // fp32 state after up to 257 fp32 rows against fp64, ulps counted at no less than the state's RMS.
    { name: 'stateOut', kind: 'f32', count: stateCount, bound: 1e-6, ulps: 32, ulpFloor: 1 },
  ];
}

function runRecurrence(
  cuda: CudaContext,
  p: Readonly<Record<string, bigint>>,
  kernel: KernelName | undefined,
  layout: RecurrenceLayout,
  table: bigint,
  sequenceCount: number,
): void {
  const { keyHeads, valueHeads, stride } = layout;
  const pointers = { out: p.out!, qkv: p.qkv!, g: p.g!, beta: p.beta!, state: p.stateOut! };
  deltaNetRecurrence(
    cuda,
    { ...pointers, qkvRowStride: stride, sequences: table, sequenceCount, keyHeads, valueHeads },
    { kernel },
  );
}

/** The fp64 recurrence of every sequence from its slot's state: o [T, Vh, 128] and the whole updated state slab. */
function recurrenceReference(
  layout: RecurrenceLayout,
  inputs: ReturnType<typeof recurrenceInputs>,
): { out: Float64Array; stateOut: Float64Array } {
  const { keyHeads, valueHeads, stride, sequences } = layout;
  const { qkv, g, beta, state } = inputs;
  const { firsts, rows } = sequenceTable(sequences);
  const out = new Float64Array(rows * valueHeads * D);
  const stateOut = Float64Array.from(state);
  const keyWidth = keyHeads * D;
  const valueWidth = valueHeads * D;
  sequences.forEach(([slot, count], index) => {
    const first = firsts[index]!;
    const q = new Float64Array(count * keyWidth);
    const k = new Float64Array(count * keyWidth);
    const v = new Float64Array(count * valueWidth);
    for (let t = 0; t < count; t++) {
      const row = (first + t) * stride;
      q.set(qkv.values.subarray(row, row + keyWidth), t * keyWidth);
      k.set(qkv.values.subarray(row + keyWidth, row + 2 * keyWidth), t * keyWidth);
      v.set(qkv.values.subarray(row + 2 * keyWidth, row + 2 * keyWidth + valueWidth), t * valueWidth);
    }
    const gates = [g, beta].map((values) =>
      Float64Array.from(values.subarray(first * valueHeads, (first + count) * valueHeads)),
    );
    const slab = stateOut.subarray(slot * valueHeads * HEAD_STATE, (slot + 1) * valueHeads * HEAD_STATE);
    const result = new Float64Array(count * valueWidth);
    const shape = { keyHeads, valueHeads, keyDim: D, valueDim: D };
    gatedDeltaRecurrent(q, k, v, gates[0]!, gates[1]!, slab, result, count, shape);
    out.set(result, first * valueWidth);
  });
  return { out, stateOut };
}

function recurrencePrepared(layout: RecurrenceLayout, draw: (index: number) => Random, nonFinite: boolean): Prepared {
  const { valueHeads, stride, slots, sequences } = layout;
  const { table, rows } = sequenceTable(sequences);
  const { qkv, g, beta, state } = recurrenceInputs(layout, rows, draw);
  if (nonFinite) {
    // A NaN query element in the last row (its key head's outputs turn NaN); a −Inf log decay (the state resets).
    plant(qkv, (rows - 1) * stride + 5, Number.NaN);
    g[0] = Number.NEGATIVE_INFINITY;
  }
  const slabBytes = slots * valueHeads * HEAD_STATE * 4;
  return {
    inputs: { qkv, g, beta, state, sequences: table },
    outputs: outputs(layout, rows),
    reference: () => recurrenceReference(layout, { qkv, g, beta, state }),
    run(cuda, p, kernel) {
      copySlab(cuda, p.stateOut!, p.state!, slabBytes);
      runRecurrence(cuda, p, kernel, layout, p.sequences!, sequences.length);
    },
  };
}

function shape(label: string, layout: RecurrenceLayout): ShapeCase {
  const { keyHeads, valueHeads, sequences } = layout;
  return {
    label: `${label} [Kh ${keyHeads}, Vh ${valueHeads}, ${sequences.length} sequences]`,
    prepare: (random, nonFinite) => recurrencePrepared(layout, () => random, nonFinite),
  };
}

/** Whole vs chunks of 1, 7 and 64 rows of one sequence, the state carried through the slab between calls. */
function chunking(rows: number): EquivalenceCase {
  const layout = real(3, [[1, rows]]);
  const slabBytes = 3 * REAL.valueHeads * HEAD_STATE * 4;
  const schedule = (chunk: number) => (cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel?: KernelName) => {
    copySlab(cuda, p.stateOut!, p.state!, slabBytes);
    for (let start = 0, index = 0; start < rows; start += chunk, index++) {
      runRecurrence(cuda, p, kernel, layout, p[`chunks${chunk}`]! + BigInt(index * 16), 1);
    }
  };
  return {
    label: `one sequence of ${rows} rows, real`,
    prepare(random) {
      const inputs = recurrenceInputs(layout, rows, () => random);
      const tables = Object.fromEntries(
        [rows, 1, 7, 64].map((chunk) => [`chunks${chunk}`, chunkTable(1, rows, chunk)]),
      );
      return {
        inputs: { ...inputs, ...tables },
        outputs: outputs(layout, rows),
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

/** Decode lanes at slots out of order, and every one of 64 slots visited out of order. */
const scattered7 = [5, 0, 11, 3, 8, 1, 6].map((slot) => [slot, 1] as const);
const scattered64 = Array.from({ length: 64 }, (_, lane) => [(lane * 37) % 64, 1] as const);
/** `count` decode lanes of 2 key heads and 4 value heads, lane i at slot i. */
const small = (count: number): RecurrenceLayout => ({
  keyHeads: 2,
  valueHeads: 4,
  stride: 8 * D,
  slots: count,
  sequences: lanes(count),
});

export const deltaNetRecurrenceCase: KernelCase = {
  name: 'delta_net gated delta rule, fp32 state',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    shape('decode, one lane, real', real(3, [[2, 1]])),
    shape('decode, 7 lanes at scattered slots, real', real(12, scattered7)),
    shape('decode, 64 lanes, real', real(64, scattered64)),
    ...[1, 7, 64, 257].map((rows) => shape(`prefill ${rows} rows, real`, real(2, [[1, rows]]))),
    shape('odd sizes, sequences of 5 and 33 rows', {
      keyHeads: 3,
      valueHeads: 6,
      stride: 12 * D + 6,
      slots: 4,
      sequences: [
        [3, 5],
        [1, 33],
      ],
    }),
    shape('one key head serving one value head, 40 rows', {
      keyHeads: 1,
      valueHeads: 1,
      stride: 3 * D + 2,
      slots: 1,
      sequences: [[0, 40]],
    }),
  ],
  invariance: [
    {
      label: 'decode lanes, Kh 2, Vh 4',
      prepare: (seed, count) => recurrencePrepared(small(count), (index) => streamOf(seed, index), false),
      elementsPerRow: { out: 4 * D, stateOut: 4 * HEAD_STATE },
    },
    {
      label: 'decode lanes, real',
      rowCounts: [1, 2, 7, 64],
      prepare: (seed, count) => recurrencePrepared(real(count, lanes(count)), (index) => streamOf(seed, index), false),
      elementsPerRow: { out: REAL.valueHeads * D, stateOut: REAL.valueHeads * HEAD_STATE },
    },
  ],
  equivalences: [chunking(100)],
};
