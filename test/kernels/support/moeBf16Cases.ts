// Contract cases for the MoE block with bf16 experts (src/backend/cuda/ops/moe.ts moeExpertsBf16): the same grouping
// and combine as the FP8 block, with the grouped bf16 gate|up + SwiGLU and down GEMMs, against the fp64 reference of
// src/backend/cpu/ops/linear.ts linearBf16 with the kernels' bf16 rounding points (gate, up, h and each expert's
// output rounded to bf16). bf16 experts take 6 MiB each and the fp64 reference is slow, so the real dimensions run
// over 32 experts (top-8) at 1, 7 and 32 rows (about 8 pairs per expert: full and partial tiles), the small geometry
// (8 experts, top-2) at 64; invariance holds a row alone
// against calls of up to 257 rows. Tiles of many pairs are the grouping's, exercised by the FP8 cases.
import { silu } from '../../../src/backend/cpu/ops/activations.ts';
import { linearBf16 } from '../../../src/backend/cpu/ops/linear.ts';
import { packDownBf16, packGateUpBf16 } from '../../../src/backend/cuda/moeWeights.ts';
import { moeExpertsBf16 } from '../../../src/backend/cuda/ops/moe.ts';
import { roundToBf16 } from '../../../src/numeric/dtypes.ts';
import {
  BF16_ONE_ROUNDING_BOUND,
  type InvarianceCase,
  type KernelCase,
  type Prepared,
  type ShapeCase,
} from './contract.ts';
import { type MoeGeometry, SMALL_MOE } from './moeReference.ts';
import {
  drawScenario,
  groupDrawnIds,
  groupingOutputs,
  groupingPointers,
  groupingReference,
  label,
  plantScenario,
  referenceOut,
  type Scenario,
} from './moeScenario.ts';
import { Random, randomBf16, streamOf } from './random.ts';

const POOL = 4;
/** The real expert dimensions over 32 experts: bf16 experts take 6 MiB each. */
const BF16_MOE: MoeGeometry = { hidden: 2048, intermediate: 512, experts: 32, topK: 8 };

interface Bf16Experts {
  readonly gateUp: Uint16Array;
  readonly down: Uint16Array;
  /** Each expert's raw bits (weight set e % POOL scaled by its own power of two). */
  readonly gate: readonly Uint16Array[];
  readonly up: readonly Uint16Array[];
  readonly downBits: readonly Uint16Array[];
}

const cache = new Map<MoeGeometry, Bf16Experts>();

function normalBits(random: Random, count: number, scale: number): Uint16Array {
  return randomBf16(random, count, scale).bits;
}

/** Expert e's weights: set e % POOL times 2^(e mod 3 − 1), exact in bf16, so every expert computes differently. */
function expertBits(bits: Uint16Array, expert: number): Uint16Array {
  const step = ((expert % 3) - 1) << 7;
  const scaled = new Uint16Array(bits.length);
  for (let index = 0; index < bits.length; index++) {
    const b = bits[index]!;
    scaled[index] = (b & 0x7f80) === 0 ? b : b + step;
  }
  return scaled;
}

function bf16ExpertsFor(geometry: MoeGeometry, random: Random): Bf16Experts {
  const existing = cache.get(geometry);
  if (existing) return existing;
  const { hidden, intermediate, experts } = geometry;
  const projection = hidden * intermediate;
  const gate = Array.from({ length: POOL }, () => normalBits(random, projection, 1 / Math.sqrt(hidden)));
  const up = Array.from({ length: POOL }, () => normalBits(random, projection, 1 / Math.sqrt(hidden)));
  const downSets = Array.from({ length: POOL }, () => normalBits(random, projection, 1 / Math.sqrt(intermediate)));
  const gateUp = new Uint16Array(experts * 2 * projection);
  const down = new Uint16Array(experts * projection);
  const made = { gateUp, down, gate: [] as Uint16Array[], up: [] as Uint16Array[], downBits: [] as Uint16Array[] };
  for (let e = 0; e < experts; e++) {
    const set = e % POOL;
    made.gate.push(expertBits(gate[set]!, e));
    made.up.push(expertBits(up[set]!, e));
    made.downBits.push(expertBits(downSets[set]!, e));
    packGateUpBf16(made.gate[e]!, made.up[e]!, hidden, intermediate, gateUp, e);
    packDownBf16(made.downBits[e]!, hidden, intermediate, down, e);
  }
  cache.set(geometry, made);
  return made;
}

/** Each expert's pairs as one call of linearBf16 (its weights widened once): per element the same sums as pair by pair. */
function referenceChain(experts: Bf16Experts, s: Scenario, deviceH: ArrayLike<number>) {
  const { hidden, intermediate, topK, experts: expertCount } = s.geometry;
  const pairs = s.rows * topK;
  const h = new Float64Array(pairs * intermediate);
  const y = new Float64Array(pairs * hidden);
  for (let e = 0; e < expertCount; e++) {
    const slots = [...s.ids.keys()].filter((slot) => s.ids[slot] === e);
    if (slots.length === 0) continue;
    const n = slots.length;
    const x = new Float64Array(n * hidden);
    slots.forEach((slot, index) => {
      const row = Math.floor(slot / topK);
      x.set(s.xBf16.values.subarray(row * hidden, (row + 1) * hidden), index * hidden);
    });
    const gate = new Float64Array(n * intermediate);
    const up = new Float64Array(n * intermediate);
    linearBf16(x, experts.gate[e]!, gate, n, hidden, intermediate, 'fp64');
    linearBf16(x, experts.up[e]!, up, n, hidden, intermediate, 'fp64');
    const hRounded = new Float64Array(n * intermediate);
    slots.forEach((slot, index) => {
      for (let j = 0; j < intermediate; j++) {
        const k = index * intermediate + j;
        const value = silu(roundToBf16(gate[k]!)) * roundToBf16(up[k]!);
        h[slot * intermediate + j] = value;
        // The down projection is judged from the h the device stored (see Prepared.reference).
        hRounded[k] = deviceH[slot * intermediate + j]!;
      }
    });
    const out = new Float64Array(n * hidden);
    linearBf16(hRounded, experts.downBits[e]!, out, n, intermediate, hidden, 'fp64');
    slots.forEach((slot, index) => {
      y.set(out.subarray(index * hidden, (index + 1) * hidden), slot * hidden);
    });
  }
  return { h, y };
}

function bf16BlockPrepared(experts: Bf16Experts, s: Scenario): Prepared {
  const g = s.geometry;
  const pairs = s.rows * g.topK;
  return {
    inputs: {
      ids: s.ids,
      weights: s.weights,
      x: s.xBf16,
      shared: s.shared,
      sharedGate: s.sharedGate,
      gateUp: new Int32Array(experts.gateUp.buffer),
      down: new Int32Array(experts.down.buffer),
    },
    outputs: [
      ...groupingOutputs(s.rows, g),
      { name: 'h', kind: 'bf16', count: pairs * g.intermediate },
      { name: 'expertOut', kind: 'bf16', count: pairs * g.hidden },
      { name: 'out', kind: 'bf16', count: s.rows * g.hidden },
    ],
    reference(device) {
      const { h, y } = referenceChain(experts, s, device.h!);
      const out = referenceOut(s, device.expertOut!, s.shared.values, s.sharedGate.values);
      return { ...groupingReference(s.ids, g), h, expertOut: y, out };
    },
    run(cuda, p) {
      groupDrawnIds(cuda, p, s);
      moeExpertsBf16(cuda, {
        ...groupingPointers(p),
        out: p.out!,
        h: p.h!,
        expertOut: p.expertOut!,
        x: p.x!,
        expertIds: p.ids!,
        expertWeights: p.weights!,
        sharedOut: p.shared!,
        sharedGate: p.sharedGate!,
        weights: { gateUp: p.gateUp!, down: p.down! },
        rows: s.rows,
        topK: g.topK,
        experts: g.experts,
        hidden: g.hidden,
        intermediate: g.intermediate,
      });
    },
  };
}

function bf16BlockShape(geometry: MoeGeometry, rows: number): ShapeCase {
  return {
    label: label('MoE block, bf16 experts,', geometry, rows, false),
    prepare(random, nonFinite) {
      const experts = bf16ExpertsFor(geometry, random);
      const s = drawScenario(random, geometry, nonFinite ? Math.min(rows, 8) : rows);
      if (nonFinite) plantScenario(s);
      return bf16BlockPrepared(experts, s);
    },
  };
}

export const moeBlockBf16Case: KernelCase = {
  name: 'moe block bf16 experts (router output → combined rows)',
  bound: BF16_ONE_ROUNDING_BOUND,
  // gate/up, h, the expert output and the combine each round to bf16 along the chain.
  // As the fp8 block: cancellation in the combine; measured on the H200 at 69.1 ulps at worst (seed 12345).
  ulps: 128,
  shapes: [
    bf16BlockShape(BF16_MOE, 1),
    bf16BlockShape(BF16_MOE, 7),
    bf16BlockShape(BF16_MOE, 32),
    bf16BlockShape(SMALL_MOE, 64),
  ],
};

export const moeBf16InvarianceCase: InvarianceCase = {
  label: label('MoE block, bf16 experts,', BF16_MOE, 257, false),
  // Experts (cached per geometry) and rows from separate streams, so the first rows are the same at every count.
  prepare(seed, rows) {
    return bf16BlockPrepared(
      bf16ExpertsFor(BF16_MOE, new Random(seed)),
      drawScenario(streamOf(seed, 1), BF16_MOE, rows),
    );
  },
  elementsPerRow: {
    h: BF16_MOE.topK * BF16_MOE.intermediate,
    expertOut: BF16_MOE.topK * BF16_MOE.hidden,
    out: BF16_MOE.hidden,
  },
};
