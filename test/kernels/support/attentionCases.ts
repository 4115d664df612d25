// Contract cases for the attention family (kernels/cuda/attention.cu): the prepare kernel (q/k norm, RoPE, KV
// append into the slabs) and the attention kernel (causal GQA over a slot's keys, gate fused), each at the backbone
// and tower geometries and at odd ones (D 64, 128), for decode steps of 1, 7 and 64 lanes at different slots and
// positions (short, ~1000, ~5000 keys, past two split points; at the backbone geometry, 2 lanes over a slab of 16640
// rows, which runs the few-rows kernel's shared form) and prefill sequences of 1, 7, 64 and 257 rows from
// position 0 and of 1, 7, 64 and 65 rows from a nonzero position (65: the on-chip fold past a split point). Calls of
// more than 64 rows run the grouped kernel (4 rows a block, the rows of one slot sharing each staged tile); two
// shapes hold it where its groups are uneven: 66 rows from 2046 (the first group straddles the split point and tile
// boundary at 2048; 66 is not a multiple of 4) and 70 rows of three slots in runs of uneven lengths, some at
// positions that jump (groups mixing slots, walked apart; groups of one slot at positions far apart). A row's tiles
// of fewer than 32 and of 32 to 63 keys (masked after the transposed score sum) come in both kernels: decode rows at
// positions 5, 999 and 2100 and prefills of up to 64 rows (per-row), the prefill of 257 rows from 0 (grouped).
// attentionSchedules.ts holds the invariance and equivalence cases.
import { attention, attentionPrepare, attentionWorkspaceBytes } from '../../../src/backend/cuda/ops/attention.ts';
import {
  ATTENTION_EPS,
  ATTENTION_THETA,
  type AttentionGeometry,
  attentionReference,
  BACKBONE,
  type CallRows,
  filledRows,
  historySlab,
  LONG_SLAB_ROWS,
  ODD_D64,
  ODD_D128,
  preparedHeads,
  rowTable,
  sequenceRows,
  TOWER,
  zerosBf16,
} from './attentionReference.ts';
import { BF16_ONE_ROUNDING_BOUND, type KernelCase, type ShapeCase } from './contract.ts';
import { plant, type Random, randomBf16 } from './random.ts';
import { rotatedPairMagnitudes } from './ulps.ts';

/** A call's rows and the slab they live in. */
export interface Scenario {
  readonly label: string;
  readonly slots: number;
  readonly capacity: number;
  rows(random: Random): CallRows;
}

function lanes(label: string, positions: readonly number[], capacity: number): Scenario {
  return {
    label: `decode, ${positions.length} lane${positions.length > 1 ? 's' : ''}, ${label}`,
    slots: positions.length + 1,
    capacity,
    rows: () => ({
      slots: Int32Array.from(positions, (_, lane) => positions.length - lane),
      positions: Int32Array.from(positions),
    }),
  };
}

function randomLanes(label: string, count: number, below: number): Scenario {
  return {
    label: `decode, ${count} lanes, ${label}`,
    slots: count,
    capacity: below,
    rows: (random) => ({
      slots: Int32Array.from({ length: count }, (_, lane) => (lane * 37) % count),
      positions: Int32Array.from({ length: count }, () => random.integer(below)),
    }),
  };
}

function prefill(count: number, start: number): Scenario {
  return {
    label: `prefill ${count} rows from position ${start}`,
    slots: 2,
    capacity: start + count + 3,
    rows: () => sequenceRows(1, start, count),
  };
}

/**
 * A call of 70 rows over three slots, in runs of consecutive positions of uneven lengths (so the grouped kernel's
 * blocks of 4 rows mix slots), some runs continuing their slot's positions and some jumping ahead (a group of one
 * slot at positions apart, one of them 1104, 1300 and 1301 with 1602 of another slot), around the split points at
 * 1024 and 1536.
 */
function mixedSlots(): Scenario {
  const runs: readonly (readonly [number, number, number])[] = [
    // [slot, first position, rows]
    [1, 1018, 9],
    [2, 300, 5],
    [1, 1027, 2],
    [0, 1533, 3],
    [1, 1100, 1],
    [2, 305, 6],
    [0, 1536, 7],
    [1, 1101, 3],
    [0, 1600, 2],
    [2, 1020, 10],
    [1, 1104, 1],
    [1, 1300, 1],
    [0, 1602, 1],
    [1, 1301, 1],
    [2, 1200, 4],
    [1, 1520, 14],
  ];
  const count = runs.reduce((sum, run) => sum + run[2], 0);
  return {
    label: `prefill-like, ${count} rows of 3 slots in uneven runs, some positions jumping`,
    slots: 3,
    capacity: 1610,
    rows: () => {
      const slots = new Int32Array(count);
      const positions = new Int32Array(count);
      let row = 0;
      for (const [slot, first, length] of runs) {
        for (let index = 0; index < length; index++, row++) {
          slots[row] = slot;
          positions[row] = first + index;
        }
      }
      return { slots, positions };
    },
  };
}

/**
 * Over a slab of LONG_SLAB_ROWS the launcher runs the few-rows kernel's shared form: a call short of the few-rows
 * walk's bound is its few-rows blocks', one with a lane past 16384 keys its per-row blocks'.
 */
export const LONG_SLAB_SCENARIOS: readonly Scenario[] = [
  lanes(`over a slab of ${LONG_SLAB_ROWS} rows, short of the few-rows walk's bound`, [7000, 5], LONG_SLAB_ROWS),
  lanes(
    `over a slab of ${LONG_SLAB_ROWS} rows, one past 16384 keys (the per-row walk's)`,
    [16500, 300],
    LONG_SLAB_ROWS,
  ),
];

const DECODE_SCENARIOS: readonly Scenario[] = [
  lanes('short', [5], 16),
  lanes('short to ~5000 keys, one past two split points', [0, 63, 64, 999, 1024, 2100, 5000], 5008),
  randomLanes('short', 64, 300),
];

const PREFILL_SCENARIOS: readonly Scenario[] = [
  prefill(1, 0),
  prefill(7, 0),
  prefill(64, 0),
  prefill(257, 0),
  prefill(1, 700),
  prefill(7, 1020),
  prefill(64, 1000),
  // Past 64 rows the splits fold on chip: 65 rows across the split point at 1024 take that path at a quarter of the
  // fp64 reference's cost of 257 (each row is its own block); 257 rows run from 0 here and past 1024 in the schedules.
  prefill(65, 1000),
  // The grouped kernel's uneven groups (see the header): thousands of keys, eight splits.
  prefill(66, 2046),
  mixedSlots(),
];

function queryWidth(g: AttentionGeometry): number {
  return g.queryHeads * g.headDim * (g.gated ? 2 : 1);
}

function prepareShape(g: AttentionGeometry, scenario: Scenario): ShapeCase {
  const { slots, capacity } = scenario;
  const { queryHeads: hq, kvHeads: hkv, headDim: d } = g;
  return {
    label: `${g.label}, ${scenario.label}`,
    prepare(random, nonFinite) {
      const rows = scenario.rows(random);
      const count = rows.slots.length;
      const qProj = randomBf16(random, count * queryWidth(g), 1);
      const kProj = randomBf16(random, count * hkv * d, 1);
      const vProj = randomBf16(random, count * hkv * d, 1);
      const qNorm = randomBf16(random, d, 0.1);
      const kNorm = randomBf16(random, d, 0.1);
      if (nonFinite) {
        plant(qProj, 1, Number.NaN);
        plant(kProj, (count - 1) * hkv * d + 3, Number.POSITIVE_INFINITY);
        plant(vProj, count * hkv * d - 1, Number.NEGATIVE_INFINITY);
      }
      const slabCount = slots * capacity * hkv * d;
      const initialKeys = zerosBf16(slabCount);
      const initialValues = zerosBf16(slabCount);
      const atPairNorms = (expected: Float64Array) => rotatedPairMagnitudes(expected, d, g.rotaryDims, g.style);
      return {
        inputs: { qProj, kProj, vProj, qNorm, kNorm, rowTable: rowTable(rows), initialKeys, initialValues },
        outputs: [
          { name: 'q', kind: 'bf16', count: count * hq * d, ulpMagnitudes: atPairNorms },
          { name: 'keys', kind: 'bf16', count: slabCount, ulpMagnitudes: atPairNorms },
          { name: 'values', kind: 'bf16', count: slabCount },
        ],
        reference() {
          const q = preparedHeads(g, qProj.values, d * (g.gated ? 2 : 1), hq, qNorm.values, rows.positions);
          const k = preparedHeads(g, kProj.values, d, hkv, kNorm.values, rows.positions);
          const keys = new Float64Array(slabCount);
          const values = new Float64Array(slabCount);
          for (let row = 0; row < count; row++) {
            const target = (rows.slots[row]! * capacity + rows.positions[row]!) * hkv * d;
            keys.set(k.subarray(row * hkv * d, (row + 1) * hkv * d), target);
            values.set(vProj.values.subarray(row * hkv * d, (row + 1) * hkv * d), target);
          }
          return { q, keys, values };
        },
        run(cuda, p, kernel) {
          cuda.driver.copyDeviceToDevice(p.keys!, p.initialKeys!, slabCount * 2, cuda.stream);
          cuda.driver.copyDeviceToDevice(p.values!, p.initialValues!, slabCount * 2, cuda.stream);
          const common = { queryHeads: hq, kvHeads: hkv, headDim: d, slots, capacity };
          attentionPrepare(
            cuda,
            {
              ...common,
              qOut: p.q!,
              keys: p.keys!,
              values: p.values!,
              qProj: p.qProj!,
              kProj: p.kProj!,
              vProj: p.vProj!,
              qNorm: p.qNorm!,
              kNorm: p.kNorm!,
              rowTable: p.rowTable!,
              rows: count,
              rotaryDims: g.rotaryDims,
              theta: ATTENTION_THETA,
              style: g.style,
              gated: g.gated,
              eps: ATTENTION_EPS,
            },
            { kernel },
          );
        },
      };
    },
  };
}

function attentionShape(g: AttentionGeometry, scenario: Scenario): ShapeCase {
  const { slots, capacity } = scenario;
  const { queryHeads: hq, kvHeads: hkv, headDim: d } = g;
  return {
    label: `${g.label}, ${scenario.label}`,
    prepare(random, nonFinite) {
      const rows = scenario.rows(random);
      const count = rows.slots.length;
      const q = randomBf16(random, count * hq * d, 1);
      const gateSource = randomBf16(random, g.gated ? count * hq * 2 * d : 1, 2);
      const keys = historySlab(random, g, capacity, filledRows(rows, slots));
      const values = historySlab(random, g, capacity, filledRows(rows, slots));
      if (nonFinite) {
        plant(q, 1, Number.NaN);
        plant(values, rows.slots[count - 1]! * capacity * hkv * d + 5, Number.POSITIVE_INFINITY);
        if (g.gated) {
          plant(gateSource, (count - 1) * hq * 2 * d + (hq - 1) * 2 * d + d + 7, Number.NaN);
          plant(gateSource, 2 * d + d + 2, Number.NEGATIVE_INFINITY);
        }
      }
      const geometry = { queryHeads: hq, kvHeads: hkv, headDim: d, slots, capacity };
      const workspace = new Float32Array(Math.max(1, attentionWorkspaceBytes(count, geometry) / 4));
      return {
        inputs: { q, gateSource, keys, values, rowTable: rowTable(rows), workspace },
        outputs: [{ name: 'out', kind: 'bf16', count: count * hq * d }],
        reference() {
          const gate = g.gated ? gateSource.values.subarray(d) : undefined;
          const out = attentionReference(
            g,
            q.values,
            keys.values,
            values.values,
            rows,
            capacity,
            gate,
            hq * 2 * d,
            2 * d,
          );
          return { out };
        },
        run(cuda, p, kernel) {
          const gate = g.gated
            ? { gate: p.gateSource! + BigInt(2 * d), gateRowStride: hq * 2 * d, gateHeadStride: 2 * d }
            : {};
          const a = { ...geometry, ...gate, out: p.out!, q: p.q!, keys: p.keys!, values: p.values! };
          attention(cuda, { ...a, rowTable: p.rowTable!, rows: count, workspace: p.workspace! }, { kernel });
        },
      };
    },
  };
}

const ALL_SCENARIOS = [...DECODE_SCENARIOS, ...PREFILL_SCENARIOS];
const MIXED_SLOTS = PREFILL_SCENARIOS[9]!;
const ODD_SCENARIOS = [DECODE_SCENARIOS[1]!, PREFILL_SCENARIOS[2]!, PREFILL_SCENARIOS[7]!, MIXED_SLOTS];

/** The attended row's and the gated row's roundings are each matched by the reference; one more for the output. */
const ATTENTION_BOUND = BF16_ONE_ROUNDING_BOUND;

export const attentionPrepareBackboneCase: KernelCase = {
  name: 'attention prepare (q/k norm, RoPE, KV append), backbone',
  bound: BF16_ONE_ROUNDING_BOUND,
  // Norm then RoPE, each rounded to bf16: an fp32-vs-fp64 norm can land on the other side of a rounding boundary,
  // and the rotation carries that one ulp on, so rotated outputs count ulps at their pair's norm (ulps.ts).
  ulps: 2,
  shapes: ALL_SCENARIOS.map((scenario) => prepareShape(BACKBONE, scenario)),
};

export const attentionPrepareOtherCase: KernelCase = {
  name: 'attention prepare, tower and odd geometries',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 2,
  shapes: [
    ...ALL_SCENARIOS.slice(0, 4).map((scenario) => prepareShape(TOWER, scenario)),
    ...ODD_SCENARIOS.map((scenario) => prepareShape(ODD_D64, scenario)),
    ...ODD_SCENARIOS.map((scenario) => prepareShape(ODD_D128, scenario)),
  ],
};

export const attentionBackboneCase: KernelCase = {
  name: 'attention (causal GQA over slabs, gate fused), backbone',
  bound: ATTENTION_BOUND,
  // The attended row and the gated row are each rounded; the softmax runs in fp32 against an fp64 reference.
  // Measured on the H200: 2.6 ulps at worst (seed 12345).
  ulps: 3,
  shapes: [...ALL_SCENARIOS, ...LONG_SLAB_SCENARIOS].map((scenario) => attentionShape(BACKBONE, scenario)),
};

export const attentionOtherCase: KernelCase = {
  name: 'attention, tower and odd geometries (D 64, 128)',
  bound: ATTENTION_BOUND,
  // The backbone's kernel and roundings, so the backbone's bound: an fp32 attended value on the other side of a bf16
  // rounding boundary from the fp64 one moves the gated output by 1 to 2 of its ulps, and its own rounding adds half.
  ulps: 3,
  shapes: [
    ...ALL_SCENARIOS.slice(0, -3).map((scenario) => attentionShape(TOWER, scenario)),
    ...ODD_SCENARIOS.map((scenario) => attentionShape(ODD_D64, scenario)),
    ...ODD_SCENARIOS.map((scenario) => attentionShape(ODD_D128, scenario)),
  ],
};
