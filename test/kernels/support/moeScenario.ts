import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import {
  MOE_TILE_PAIRS,
  type MoeFp8Weights,
  type MoeGrouping,
  moeGroupPairs,
  moeMaxTiles,
} from '../../../src/backend/cuda/ops/moe.ts';
import { roundToBf16 } from '../../../src/numeric/dtypes.ts';
import type { HostInput, OutputSpec } from './contract.ts';
import {
  type Fp8Experts,
  type MoeGeometry,
  type QuantizedRows,
  quantizeRows,
  randomFp8Experts,
  randomRoutingRow,
  referenceCombineRow,
  referenceDown,
  referenceGateUp,
  referenceGrouping,
} from './moeReference.ts';
import { type Bf16Tensor, bf16FromValues, plant, type Random } from './random.ts';

export type Pointers = Readonly<Record<string, bigint>>;

/** Bytes as int32 words, so they travel as a HostInput (every byte count here is a multiple of 4). */
export function words(bytes: Uint8Array): Int32Array {
  return new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

const expertsByGeometry = new Map<MoeGeometry, Fp8Experts>();

/** One random set of experts per geometry per process (hundreds of MB at the real size): drawn once. */
export function expertsFor(geometry: MoeGeometry, random: Random): Fp8Experts {
  let experts = expertsByGeometry.get(geometry);
  if (!experts) {
    experts = randomFp8Experts(random, geometry);
    expertsByGeometry.set(geometry, experts);
  }
  return experts;
}

export function weightInputs(experts: Fp8Experts): Record<string, HostInput> {
  return {
    gateUp: words(experts.gateUp),
    gateUpScales: experts.gateUpScales,
    down: words(experts.down),
    downScales: experts.downScales,
  };
}

export function weightPointers(p: Pointers): MoeFp8Weights {
  return { gateUp: p.gateUp!, gateUpScales: p.gateUpScales!, down: p.down!, downScales: p.downScales! };
}

export function groupingPointers(p: Pointers): MoeGrouping {
  return { pairSlots: p.pairSlots!, expertOffsets: p.expertOffsets!, tiles: p.tiles!, tileCount: p.tileCount! };
}

/** The scenario's drawn ids grouped on the device, as the router's launch groups its own (the router cases hold it to
 * the same tables). */
export function groupDrawnIds(cuda: CudaContext, p: Pointers, s: Scenario): void {
  const { topK, experts } = s.geometry;
  moeGroupPairs(cuda, { ...groupingPointers(p), expertIds: p.ids!, rows: s.rows, topK, experts });
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
export function referenceH(experts: Fp8Experts, s: Scenario): Float64Array {
  const { intermediate, topK } = s.geometry;
  const h = new Float64Array(s.rows * topK * intermediate);
  for (let slot = 0; slot < s.rows * topK; slot++) {
    h.set(referenceGateUp(experts, slotExpert(s, slot), s.x, Math.floor(slot / topK)), slot * intermediate);
  }
  return h;
}

export function referenceY(experts: Fp8Experts, s: Scenario, h: Float64Array): Float64Array {
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
