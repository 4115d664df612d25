// Contract cases for the MoE experts on the device (src/backend/cuda/ops/moe.ts): the grouping (integer outputs
// exact), the grouped FP8 gate|up + SwiGLU, the down projection, the combine, and the whole routed-expert block from
// the router's output, against the fp64 reference of moeReference.ts. Shapes: 1, 7, 64 and 257 rows at the real
// geometry (H 2048, I 512, 256 experts, top-8), a small one (8 experts, top-2, 257 rows: many pairs per expert) and a
// skewed routing (one expert in every row); the whole block at 257 rows is held to its result alone by the
// invariance cases. Runs with NaN/±Inf planted use at most 8 rows (the fp64 reference is
// slow at full size); the intermediate buffers (grouping, h, expert outputs) are outputs too, checked the same way.
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import {
  MOE_TILE_PAIRS,
  type MoeFp8Weights,
  type MoeGrouping,
  moeCombine,
  moeDownFp8,
  moeExpertsFp8,
  moeGateUpFp8,
  moeGroupPairs,
  moeMaxTiles,
} from '../../../src/backend/cuda/ops/moe.ts';
import { roundToBf16 } from '../../../src/checkpoint/dtypes.ts';
import {
  BF16_ONE_ROUNDING_BOUND,
  type HostInput,
  type InvarianceCase,
  type KernelCase,
  type OutputSpec,
  type Prepared,
  type ShapeCase,
} from './contract.ts';
import {
  type Fp8Experts,
  type MoeGeometry,
  type QuantizedRows,
  quantizeRows,
  REAL_MOE,
  randomFp8Experts,
  randomRoutingRow,
  referenceCombineRow,
  referenceDown,
  referenceGateUp,
  referenceGrouping,
  SMALL_MOE,
} from './moeReference.ts';
import { type Bf16Tensor, bf16FromValues, plant, Random, randomBf16 } from './random.ts';

type Pointers = Readonly<Record<string, bigint>>;

/** Bytes as int32 words, so they travel as a HostInput (every byte count here is a multiple of 4). */
function words(bytes: Uint8Array): Int32Array {
  return new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

const expertsByGeometry = new Map<MoeGeometry, Fp8Experts>();

/** One random set of experts per geometry per process (hundreds of MB at the real size): drawn once. */
function expertsFor(geometry: MoeGeometry, random: Random): Fp8Experts {
  let experts = expertsByGeometry.get(geometry);
  if (!experts) {
    experts = randomFp8Experts(random, geometry);
    expertsByGeometry.set(geometry, experts);
  }
  return experts;
}

function weightInputs(experts: Fp8Experts): Record<string, HostInput> {
  return {
    gateUp: words(experts.gateUp),
    gateUpScales: experts.gateUpScales,
    down: words(experts.down),
    downScales: experts.downScales,
  };
}

function weightPointers(p: Pointers): MoeFp8Weights {
  return { gateUp: p.gateUp!, gateUpScales: p.gateUpScales!, down: p.down!, downScales: p.downScales! };
}

export function groupingPointers(p: Pointers): MoeGrouping {
  return { pairSlots: p.pairSlots!, expertOffsets: p.expertOffsets!, tiles: p.tiles!, tileCount: p.tileCount! };
}

export function groupingOutputs(rows: number, g: MoeGeometry): OutputSpec[] {
  return [
    { name: 'pairSlots', kind: 'i32', count: rows * g.topK },
    { name: 'expertOffsets', kind: 'i32', count: g.experts + 1 },
    { name: 'tiles', kind: 'i32', count: moeMaxTiles(rows * g.topK, g.experts) * 4 },
    { name: 'tileCount', kind: 'i32', count: 1 },
  ];
}

export function groupingReference(ids: Int32Array, g: MoeGeometry) {
  return referenceGrouping(ids, g.experts, MOE_TILE_PAIRS, moeMaxTiles(ids.length, g.experts));
}

/** A call's routed rows, drawn row by row (so the first r rows agree for every row count ≥ r). */
export interface Scenario {
  readonly rows: number;
  readonly geometry: MoeGeometry;
  readonly ids: Int32Array;
  readonly weights: Float32Array;
  readonly x: QuantizedRows;
  /** The same rows in bf16, before quantisation (what bf16 experts read). */
  readonly xBf16: Bf16Tensor;
  readonly shared: Bf16Tensor;
  readonly sharedGate: Bf16Tensor;
}

export function drawScenario(random: Random, geometry: MoeGeometry, rows: number, alwaysExpert?: number): Scenario {
  const { hidden, topK } = geometry;
  const ids = new Int32Array(rows * topK);
  const weights = new Float32Array(rows * topK);
  const xValues = new Float64Array(rows * hidden);
  const sharedValues = new Float64Array(rows * hidden);
  const gateValues = new Float64Array(rows);
  for (let row = 0; row < rows; row++) {
    randomRoutingRow(random, geometry, ids, weights, row, alwaysExpert);
    for (let c = 0; c < hidden; c++) xValues[row * hidden + c] = roundToBf16(random.normal());
    for (let c = 0; c < hidden; c++) sharedValues[row * hidden + c] = roundToBf16(0.05 * random.normal());
    gateValues[row] = random.normal();
  }
  return {
    rows,
    geometry,
    ids,
    weights,
    x: quantizeRows(xValues, rows, hidden),
    xBf16: bf16FromValues(xValues),
    shared: bf16FromValues(sharedValues),
    sharedGate: bf16FromValues(gateValues),
  };
}

/** NaN in row 0's first activation block, +Inf in a shared-expert value, NaN in row 2's shared gate logit. */
export function plantScenario(s: Scenario): void {
  s.x.bits[5] = 0x7f;
  s.x.values[5] = Number.NaN;
  plant(s.xBf16, 5, Number.NaN);
  plant(s.shared, Math.min(1, s.rows - 1) * s.geometry.hidden + 3, Number.POSITIVE_INFINITY);
  if (s.rows > 2) plant(s.sharedGate, 2, Number.NaN);
}

export function label(name: string, g: MoeGeometry, rows: number, skewed: boolean): string {
  const routing = skewed ? ', one expert in every row' : '';
  return `${name} ${rows} row${rows > 1 ? 's' : ''}, ${g.experts} experts top-${g.topK}${routing}`;
}

function slotExpert(s: Scenario, slot: number): number {
  return s.ids[slot]!;
}

/** h (unrounded fp64) for every slot. */
function referenceH(experts: Fp8Experts, s: Scenario): Float64Array {
  const { intermediate, topK } = s.geometry;
  const h = new Float64Array(s.rows * topK * intermediate);
  for (let slot = 0; slot < s.rows * topK; slot++) {
    h.set(referenceGateUp(experts, slotExpert(s, slot), s.x, Math.floor(slot / topK)), slot * intermediate);
  }
  return h;
}

function referenceY(experts: Fp8Experts, s: Scenario, h: Float64Array): Float64Array {
  const { hidden, intermediate, topK } = s.geometry;
  const y = new Float64Array(s.rows * topK * hidden);
  for (let slot = 0; slot < s.rows * topK; slot++) {
    const row = h.subarray(slot * intermediate, (slot + 1) * intermediate);
    y.set(referenceDown(experts, slotExpert(s, slot), row), slot * hidden);
  }
  return y;
}

export function referenceOut(s: Scenario, y: ArrayLike<number>, shared: ArrayLike<number>, gate: ArrayLike<number>) {
  const { hidden, topK, experts } = s.geometry;
  const out = new Float64Array(s.rows * hidden);
  for (let row = 0; row < s.rows; row++) {
    referenceCombineRow(
      (k, c) => y[(row * topK + k) * hidden + c]!,
      s.ids.subarray(row * topK, (row + 1) * topK),
      s.weights.subarray(row * topK, (row + 1) * topK),
      (c) => shared[row * hidden + c]!,
      gate[row]!,
      experts,
      hidden,
      out.subarray(row * hidden, (row + 1) * hidden),
    );
  }
  return out;
}

export const rounded = (values: Float64Array) => values.map(roundToBf16);

interface ShapeOptions {
  readonly geometry: MoeGeometry;
  readonly rows: number;
  readonly skewed?: boolean;
}

function scenarioFor(random: Random, o: ShapeOptions, nonFinite: boolean): { experts: Fp8Experts; s: Scenario } {
  const experts = expertsFor(o.geometry, random);
  const rows = nonFinite ? Math.min(o.rows, 8) : o.rows;
  const s = drawScenario(random, o.geometry, rows, o.skewed ? 3 : undefined);
  if (nonFinite) plantScenario(s);
  return { experts, s };
}

function groupingShape(o: ShapeOptions): ShapeCase {
  return {
    label: label('grouping', o.geometry, o.rows, o.skewed ?? false),
    prepare(random, nonFinite): Prepared {
      const { s } = scenarioFor(random, o, false);
      const g = o.geometry;
      // Planted: expert ids out of range are left out of every list.
      if (nonFinite) {
        s.ids[Math.min(1, s.ids.length - 1)] = -1;
        if (s.ids.length > 3) s.ids[3] = g.experts;
      }
      return {
        inputs: { ids: s.ids },
        outputs: groupingOutputs(s.rows, g),
        reference: () => groupingReference(s.ids, g),
        run(cuda, p, kernel) {
          const a = { ...groupingPointers(p), expertIds: p.ids!, rows: s.rows, topK: g.topK, experts: g.experts };
          moeGroupPairs(cuda, a, { kernel });
        },
      };
    },
  };
}

function gateUpShape(o: ShapeOptions): ShapeCase {
  return {
    label: label('gate|up + SwiGLU', o.geometry, o.rows, o.skewed ?? false),
    prepare(random, nonFinite): Prepared {
      const { experts, s } = scenarioFor(random, o, nonFinite);
      const g = o.geometry;
      return {
        inputs: { ids: s.ids, quantized: words(s.x.bits), scales: s.x.scales, ...weightInputs(experts) },
        outputs: [...groupingOutputs(s.rows, g), { name: 'h', kind: 'bf16', count: s.rows * g.topK * g.intermediate }],
        reference: () => ({ ...groupingReference(s.ids, g), h: referenceH(experts, s) }),
        run(cuda, p, kernel) {
          const grouping = groupingPointers(p);
          const sizes = { rows: s.rows, topK: g.topK, experts: g.experts };
          moeGroupPairs(cuda, { ...grouping, expertIds: p.ids!, ...sizes });
          const a = { ...grouping, ...sizes, hidden: g.hidden, intermediate: g.intermediate };
          moeGateUpFp8(
            cuda,
            { ...a, h: p.h!, quantized: p.quantized!, scales: p.scales!, weights: weightPointers(p) },
            { kernel },
          );
        },
      };
    },
  };
}

function downShape(o: ShapeOptions): ShapeCase {
  return {
    label: label('down', o.geometry, o.rows, o.skewed ?? false),
    prepare(random, nonFinite): Prepared {
      const { experts, s } = scenarioFor(random, o, false);
      const g = o.geometry;
      const pairs = (nonFinite ? Math.min(o.rows, 8) : o.rows) * g.topK;
      const rows = pairs / g.topK;
      const h = randomBf16(random, pairs * g.intermediate, 0.3);
      if (nonFinite) {
        plant(h, 0, Number.POSITIVE_INFINITY);
        if (pairs > 1) plant(h, g.intermediate + 200, Number.NaN);
      }
      const ids = s.ids.slice(0, pairs);
      const view: Scenario = { ...s, rows, ids };
      return {
        inputs: { ids, h, ...weightInputs(experts) },
        outputs: [...groupingOutputs(rows, g), { name: 'y', kind: 'bf16', count: pairs * g.hidden }],
        reference: () => ({ ...groupingReference(ids, g), y: referenceY(experts, view, h.values) }),
        run(cuda, p, kernel) {
          const grouping = groupingPointers(p);
          const sizes = { rows, topK: g.topK, experts: g.experts };
          moeGroupPairs(cuda, { ...grouping, expertIds: p.ids!, ...sizes });
          const a = { ...grouping, ...sizes, hidden: g.hidden, intermediate: g.intermediate };
          moeDownFp8(cuda, { ...a, y: p.y!, h: p.h!, weights: weightPointers(p) }, { kernel });
        },
      };
    },
  };
}

function combinePrepared(s: Scenario, y: Bf16Tensor): Prepared {
  const g = s.geometry;
  return {
    inputs: { y, ids: s.ids, weights: s.weights, shared: s.shared, sharedGate: s.sharedGate },
    outputs: [{ name: 'out', kind: 'bf16', count: s.rows * g.hidden }],
    reference: () => ({ out: referenceOut(s, y.values, s.shared.values, s.sharedGate.values) }),
    run(cuda, p, kernel) {
      const a = { out: p.out!, expertOut: p.y!, expertIds: p.ids!, expertWeights: p.weights!, sharedOut: p.shared! };
      moeCombine(
        cuda,
        { ...a, sharedGate: p.sharedGate!, rows: s.rows, topK: g.topK, experts: g.experts, hidden: g.hidden },
        { kernel },
      );
    },
  };
}

function combineShape(o: ShapeOptions): ShapeCase {
  return {
    label: label('combine', o.geometry, o.rows, o.skewed ?? false),
    prepare(random, nonFinite): Prepared {
      const s = drawScenario(random, o.geometry, o.rows, o.skewed ? 3 : undefined);
      const g = o.geometry;
      const y = randomBf16(random, s.rows * g.topK * g.hidden, 0.2);
      if (nonFinite) {
        plant(y, 7, Number.NEGATIVE_INFINITY);
        plant(s.shared, (s.rows - 1) * g.hidden + 3, Number.POSITIVE_INFINITY);
        plant(s.sharedGate, Math.min(1, s.rows - 1), Number.NaN);
        if (s.rows > 2) s.ids[2 * g.topK + 1] = g.experts;
      }
      return combinePrepared(s, y);
    },
  };
}

function blockPrepared(
  experts: Fp8Experts,
  s: Scenario,
  kernel: { down?: KernelName; combine?: KernelName },
): Prepared {
  const g = s.geometry;
  const pairs = s.rows * g.topK;
  return {
    inputs: {
      ids: s.ids,
      weights: s.weights,
      quantized: words(s.x.bits),
      scales: s.x.scales,
      shared: s.shared,
      sharedGate: s.sharedGate,
      ...weightInputs(experts),
    },
    outputs: [
      ...groupingOutputs(s.rows, g),
      { name: 'h', kind: 'bf16', count: pairs * g.intermediate },
      { name: 'expertOut', kind: 'bf16', count: pairs * g.hidden },
      { name: 'out', kind: 'bf16', count: s.rows * g.hidden },
    ],
    reference() {
      // The chain with the kernels' rounding points: h and each expert output rounded to bf16 before the next step.
      const h = referenceH(experts, s);
      const y = referenceY(experts, s, rounded(h));
      const out = referenceOut(s, rounded(y), s.shared.values, s.sharedGate.values);
      return { ...groupingReference(s.ids, g), h, expertOut: y, out };
    },
    run(cuda: CudaContext, p: Pointers) {
      moeExpertsFp8(
        cuda,
        {
          ...groupingPointers(p),
          out: p.out!,
          h: p.h!,
          expertOut: p.expertOut!,
          quantized: p.quantized!,
          scales: p.scales!,
          expertIds: p.ids!,
          expertWeights: p.weights!,
          sharedOut: p.shared!,
          sharedGate: p.sharedGate!,
          weights: weightPointers(p),
          rows: s.rows,
          topK: g.topK,
          experts: g.experts,
          hidden: g.hidden,
          intermediate: g.intermediate,
        },
        kernel,
      );
    },
  };
}

function blockShape(o: ShapeOptions): ShapeCase {
  return {
    label: label('MoE block', o.geometry, o.rows, o.skewed ?? false),
    prepare(random, nonFinite) {
      const { experts, s } = scenarioFor(random, o, nonFinite);
      return blockPrepared(experts, s, {});
    },
  };
}

const real = (rows: number, skewed = false): ShapeOptions => ({ geometry: REAL_MOE, rows, skewed });
const small = (rows: number): ShapeOptions => ({ geometry: SMALL_MOE, rows });
// 64 rows of the small geometry put about 16 pairs on each expert (two tiles); the skewed routing puts 64 on one.

export const moeGroupingCase: KernelCase = {
  name: 'moe grouping (pairs by expert, tile table)',
  bound: 0,
  shapes: [real(1), real(7), real(64), real(257), real(257, true), small(257)].map(groupingShape),
};

export const moeGateUpFp8Case: KernelCase = {
  name: 'moe gate|up fp8 + SwiGLU (grouped)',
  bound: BF16_ONE_ROUNDING_BOUND,
  shapes: [real(1), real(7), real(64), small(64)].map(gateUpShape),
};

export const moeDownFp8Case: KernelCase = {
  name: 'moe down fp8 (grouped, activations quantised inside)',
  bound: BF16_ONE_ROUNDING_BOUND,
  shapes: [real(1), real(7), real(64), small(64)].map(downShape),
};

export const moeCombineCase: KernelCase = {
  name: 'moe combine (ascending expert id, fp64) + shared expert',
  bound: BF16_ONE_ROUNDING_BOUND,
  shapes: [real(1), real(7), real(64), real(257), small(257)].map(combineShape),
};

export const moeBlockFp8Case: KernelCase = {
  name: 'moe block fp8 (router output → combined rows)',
  bound: BF16_ONE_ROUNDING_BOUND,
  shapes: [real(1), real(7), real(64), real(64, true), small(64)].map(blockShape),
};

/** A row's outputs alone and inside calls of 2, 7, 64 and 257 rows (different neighbours each time). */
function blockInvariance(
  geometry: MoeGeometry,
  skewed: boolean,
  kernel: { down?: KernelName; combine?: KernelName } = {},
): InvarianceCase {
  return {
    label: label('MoE block', geometry, 257, skewed),
    prepare(seed, rows) {
      const random = new Random(seed);
      const experts = expertsFor(geometry, random);
      return blockPrepared(experts, drawScenario(random, geometry, rows, skewed ? 3 : undefined), kernel);
    },
    elementsPerRow: {
      h: geometry.topK * geometry.intermediate,
      expertOut: geometry.topK * geometry.hidden,
      out: geometry.hidden,
    },
  };
}

export const moeInvarianceCases: readonly InvarianceCase[] = [
  blockInvariance(REAL_MOE, false),
  blockInvariance(REAL_MOE, true),
  blockInvariance(SMALL_MOE, false),
];

/** The same invariance case with the combine replaced by a control (moe_controls.cu). */
export function moeBlockInvarianceWith(kernel: { down?: KernelName; combine?: KernelName }): InvarianceCase {
  return blockInvariance(REAL_MOE, false, kernel);
}
