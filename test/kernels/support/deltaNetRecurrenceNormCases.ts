// Contract case for the decode recurrence with its gated RMSNorm in one launch (kernels/cuda/delta_net_norm.cuh,
// delta_net_recurrence_norm_bf16: clusters of a head's four column groups). Against the fp64 recurrence (o and the
// state, as deltaNetRecurrenceCases.ts holds them) and the fp64 gated norm of the run's own bf16 o; byte for byte
// against the two launches it replaces (delta_net_recurrence_bf16, rms_norm_gated_bf16); each lane alike in decode
// calls of 1 to 64 lanes.
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import {
  DELTA_NET_HEAD_DIM,
  deltaNetRecurrence,
  deltaNetRecurrenceNorm,
} from '../../../src/backend/cuda/ops/deltaNet.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import { gatedRmsNorm } from '../../../src/backend/cuda/ops/rmsNorm.ts';
import { gatedRmsNorm as gatedReference } from '../../../src/numeric/norms.ts';
import {
  BF16_ONE_ROUNDING_BOUND,
  type EquivalenceCase,
  type KernelCase,
  type OutputSpec,
  type Prepared,
  type ShapeCase,
} from './contract.ts';
import { copySlab, lanes, REAL, sequenceTable } from './deltaNetCases.ts';
import {
  type RecurrenceLayout,
  real,
  recurrenceInputs,
  outputs as recurrenceOutputs,
  recurrenceReference,
  scattered7,
  scattered64,
  small,
} from './deltaNetRecurrenceCases.ts';
import { type Bf16Tensor, plant, type Random, randomBf16, streamOf } from './random.ts';

const D = DELTA_NET_HEAD_DIM;
const EPS = 1e-6;

function outputs(layout: RecurrenceLayout, rows: number): OutputSpec[] {
  return [...recurrenceOutputs(layout, rows), { name: 'normed', kind: 'bf16', count: rows * layout.valueHeads * D }];
}

interface Drawn {
  readonly recurrence: ReturnType<typeof recurrenceInputs>;
  readonly gate: Bf16Tensor;
  readonly normWeight: Bf16Tensor;
}

/** The recurrence's inputs (streams 0 to 3), then the norm weight and z (4 and 5), so that lane prefixes repeat. */
function draw(layout: RecurrenceLayout, rows: number, stream: (index: number) => Random): Drawn {
  return {
    recurrence: recurrenceInputs(layout, rows, stream),
    normWeight: randomBf16(stream(4), D, 0.2, 1),
    gate: randomBf16(stream(5), rows * layout.valueHeads * D, 2),
  };
}

function inputs(layout: RecurrenceLayout, d: Drawn) {
  return { ...d.recurrence, gate: d.gate, normWeight: d.normWeight, sequences: sequenceTable(layout.sequences).table };
}

function recurrenceArguments(layout: RecurrenceLayout, p: Readonly<Record<string, bigint>>) {
  const { keyHeads, valueHeads, stride, sequences } = layout;
  const pointers = { out: p.out!, qkv: p.qkv!, g: p.g!, beta: p.beta!, state: p.stateOut! };
  return {
    ...pointers,
    qkvRowStride: stride,
    sequences: p.sequences!,
    sequenceCount: sequences.length,
    keyHeads,
    valueHeads,
  };
}

const slabBytes = (layout: RecurrenceLayout) => layout.slots * layout.valueHeads * D * D * 4;

/** The one launch, as delta-net-block.ts runs a decode call with DRAMA3_DELTA_NET_NORM=fused. */
function fusedRun(layout: RecurrenceLayout) {
  return (cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) => {
    copySlab(cuda, p.stateOut!, p.state!, slabBytes(layout));
    const norm = { normed: p.normed!, gate: p.gate!, normWeight: p.normWeight!, eps: EPS };
    deltaNetRecurrenceNorm(cuda, { ...recurrenceArguments(layout, p), ...norm }, { kernel });
  };
}

/** The launches it replaces: the recurrence, then the gated norm over every (row, value head). */
function separateRun(layout: RecurrenceLayout) {
  return (cuda: CudaContext, p: Readonly<Record<string, bigint>>) => {
    copySlab(cuda, p.stateOut!, p.state!, slabBytes(layout));
    deltaNetRecurrence(cuda, recurrenceArguments(layout, p));
    const rows = layout.sequences.length;
    const norm = { out: p.normed!, x: p.out!, gate: p.gate!, weight: p.normWeight! };
    gatedRmsNorm(cuda, { ...norm, rows: rows * layout.valueHeads, cols: D, eps: EPS });
  };
}

function prepared(layout: RecurrenceLayout, d: Drawn): Prepared {
  const rows = layout.sequences.length;
  return {
    inputs: inputs(layout, d),
    outputs: outputs(layout, rows),
    reference(device) {
      const { out, stateOut } = recurrenceReference(layout, d.recurrence);
      // The norm from the run's own bf16 o, so that one rounding flip of o is not counted twice.
      const normed = new Float64Array(rows * layout.valueHeads * D);
      const o = device.out as Float64Array;
      gatedReference(o, d.gate.values, d.normWeight.values, normed, rows * layout.valueHeads, D, EPS);
      return { out, stateOut, normed };
    },
    run: fusedRun(layout),
  };
}

function shape(label: string, layout: RecurrenceLayout): ShapeCase {
  return {
    label: `${label} [Kh ${layout.keyHeads}, Vh ${layout.valueHeads}, ${layout.sequences.length} lanes]`,
    prepare(random: Random, nonFinite: boolean) {
      const rows = layout.sequences.length;
      const d = draw(layout, rows, () => random);
      if (nonFinite) {
        // A NaN query element in the last lane (its key head's outputs turn NaN), a −Inf gate (silu(−Inf) is NaN).
        plant(d.recurrence.qkv, (rows - 1) * layout.stride + 5, Number.NaN);
        plant(d.gate, d.gate.values.length - 1, Number.NEGATIVE_INFINITY);
      }
      return prepared(layout, d);
    },
  };
}

function againstSeparate(layout: RecurrenceLayout): EquivalenceCase {
  return {
    label: `one launch against the recurrence and the gated norm, ${layout.sequences.length} lanes`,
    prepare(random: Random) {
      const d = draw(layout, layout.sequences.length, () => random);
      return {
        inputs: inputs(layout, d),
        outputs: outputs(layout, layout.sequences.length),
        runs: { separate: separateRun(layout), 'one launch': fusedRun(layout) },
      };
    },
  };
}

export const deltaNetRecurrenceNormCase: KernelCase = {
  name: 'delta_net decode recurrence with its gated norm (one cluster launch)',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    shape('decode, one lane, real', real(3, [[2, 1]])),
    shape('decode, 7 lanes at scattered slots, real', real(12, scattered7)),
    shape('decode, 64 lanes, real', real(64, scattered64)),
    shape('decode, Kh 2, Vh 4', small(5)),
  ],
  invariance: [
    {
      label: 'decode lanes, real',
      rowCounts: [1, 2, 7, 64],
      prepare: (seed, count) => {
        const layout = real(count, lanes(count));
        return prepared(
          layout,
          draw(layout, count, (index) => streamOf(seed, index)),
        );
      },
      elementsPerRow: { out: REAL.valueHeads * D, stateOut: REAL.valueHeads * D * D, normed: REAL.valueHeads * D },
    },
  ],
  equivalences: [real(3, [[2, 1]]), real(12, scattered7), real(64, scattered64), small(5)].map(againstSeparate),
};
