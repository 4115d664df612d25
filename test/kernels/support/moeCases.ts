// Contract cases for the MoE experts on the device (src/backend/cuda/ops/moe.ts): the grouping (integer outputs
// exact; moe_group_pairs, which also groups the drawn ids the other cases start from: the backend groups in the
// router's launch, held to the same tables by the router cases), the grouped FP8 gate|up + SwiGLU, the down
// projection (quantising h itself), the combine, and the whole routed-expert block from the router's output, against
// the fp64 reference of moeReference.ts. Shapes: 1, 7, 16 (GEMMs; 64 and 257 for the
// grouping and combine) rows at the real geometry (H 2048, I 512, 256 experts, top-8), a small one (8 experts, top-2,
// 64 or 257 rows: many pairs per expert) and a skewed routing (one expert in every row); the whole block at 257 rows
// is held to its result alone by the invariance cases. Runs with NaN/±Inf planted use at most 8 rows (the fp64 reference is
// slow at full size); the intermediate buffers (grouping, h, expert outputs) are outputs too, checked the same way.
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import {
  type MoeGroupsWalked,
  type MoeTiling,
  moeCombine,
  moeDownFp8,
  moeExpertsFp8,
  moeGateUpFp8,
  moeGroupPairs,
} from '../../../src/backend/cuda/ops/moe.ts';
import {
  BF16_ONE_ROUNDING_BOUND,
  type EquivalenceCase,
  type InvarianceCase,
  type KernelCase,
  type Prepared,
  type ShapeCase,
} from './contract.ts';
import { type Fp8Experts, type MoeGeometry, REAL_MOE, SMALL_MOE } from './moeReference.ts';
import {
  drawScenario,
  expertsFor,
  groupDrawnIds,
  groupingOutputs,
  groupingPointers,
  groupingReference,
  label,
  type Pointers,
  plantScenario,
  referenceH,
  referenceOut,
  referenceY,
  type Scenario,
  weightInputs,
  weightPointers,
  words,
} from './moeScenario.ts';
import { type Bf16Tensor, plant, Random, randomBf16, streamOf } from './random.ts';

interface ShapeOptions {
  readonly geometry: MoeGeometry;
  readonly rows: number;
  readonly skewed?: boolean;
  /** The GEMMs' tiles; absent: the launcher's choice by row count. */
  readonly tiling?: MoeTiling;
}

function tiledLabel(name: string, o: ShapeOptions): string {
  const base = label(name, o.geometry, o.rows, o.skewed ?? false);
  return o.tiling === undefined ? base : `${base}, ${o.tiling} tiles`;
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
    label: tiledLabel('gate|up + SwiGLU', o),
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
          const a = { ...grouping, ...sizes, hidden: g.hidden, intermediate: g.intermediate, tiling: o.tiling };
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
    label: tiledLabel('down', o),
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
        // referenceY quantises h per row per 128 columns (quantizeActivationsE4m3), as the kernel does in shared memory.
        reference: () => ({ ...groupingReference(ids, g), y: referenceY(experts, view, h.values) }),
        run(cuda, p, kernel) {
          const grouping = groupingPointers(p);
          const sizes = { rows, topK: g.topK, experts: g.experts };
          moeGroupPairs(cuda, { ...grouping, expertIds: p.ids!, ...sizes });
          const a = { ...grouping, ...sizes, hidden: g.hidden, intermediate: g.intermediate, tiling: o.tiling };
          moeDownFp8(cuda, { ...a, h: p.h!, y: p.y!, weights: weightPointers(p) }, { kernel });
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
  tiling?: MoeTiling,
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
    reference(device) {
      // Each stage from the device's own input to it (h, then the expert outputs): the chain's rounding points.
      const h = referenceH(experts, s);
      const y = referenceY(experts, s, device.h as Float64Array);
      const out = referenceOut(s, device.expertOut!, s.shared.values, s.sharedGate.values);
      return { ...groupingReference(s.ids, g), h, expertOut: y, out };
    },
    run(cuda: CudaContext, p: Pointers) {
      groupDrawnIds(cuda, p, s);
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
          tiling,
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
// 64 rows of the small geometry put about 16 pairs on each expert (two tiles); 16 real rows put 128 pairs on 256
// experts (tiles of one to a few pairs, as 64 rows do, at a quarter of the fp64 reference's cost); the skewed routing
// puts 24 on one (three full tiles). The grouping, the combine and the invariance cases keep 64 and 257 rows.

export const moeGroupingCase: KernelCase = {
  name: 'moe grouping (pairs by expert, tile table)',
  bound: 0,
  ulps: 0,
  shapes: [real(1), real(7), real(64), real(257), real(257, true), small(257)].map(groupingShape),
};

/**
 * h = bf16(silu(bf16(gate)) · bf16(up)); the reference rounds the exact gate and up, the kernel its fp32 sums, so
 * either can land one bf16 ulp away. A flip of up moves h by one ulp, one of gate by |1 + g(1 − σ(g))| ulps (1.28 at
 * most for g > 0), and the final rounding adds half: the narrow kernel measured 2.01 ulps (seed 747170740) against the
 * 2 this gate once had.
 */
export const GATE_UP_ULPS = 3;

export const moeGateUpFp8Case: KernelCase = {
  name: 'moe gate|up fp8 + SwiGLU (grouped)',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: GATE_UP_ULPS,
  shapes: [real(1), real(7), real(16), small(64)].map(gateUpShape),
};

export const moeDownFp8Case: KernelCase = {
  name: 'moe down fp8 (grouped, h quantised in the kernel)',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 2,
  shapes: [real(1), real(7), real(16), small(64)].map(downShape),
};

const wide = (o: ShapeOptions): ShapeOptions => ({ ...o, tiling: 'wide' });

/**
 * Narrow tiles walking 4 weight groups and wide tiles against narrow tiles walking one, on the same grouped inputs,
 * byte for byte: gate|up (h) and down (y), a kernel override (a control) given to the wide launch of `stage` only.
 */
function tilingsAgree(o: ShapeOptions, stage: 'gate|up' | 'down'): EquivalenceCase {
  const g = o.geometry;
  return {
    label: `${label('tilings agree', g, o.rows, o.skewed ?? false)}, ${stage}`,
    prepare(random) {
      const { experts, s } = scenarioFor(random, o, false);
      const pairs = s.rows * g.topK;
      const h = randomBf16(random, pairs * g.intermediate, 0.3);
      const run =
        (tiling: MoeTiling, groupsWalked?: MoeGroupsWalked) =>
        (cuda: CudaContext, p: Pointers, kernel: KernelName | undefined) => {
          const grouping = groupingPointers(p);
          const sizes = { rows: s.rows, topK: g.topK, experts: g.experts };
          moeGroupPairs(cuda, { ...grouping, expertIds: p.ids!, ...sizes });
          const a = { ...grouping, ...sizes, hidden: g.hidden, intermediate: g.intermediate, tiling, groupsWalked };
          const override = (which: typeof stage) => (tiling === 'wide' && which === stage ? kernel : undefined);
          const gateUp = {
            ...a,
            h: p.gateUpOut!,
            quantized: p.quantized!,
            scales: p.scales!,
            weights: weightPointers(p),
          };
          moeGateUpFp8(cuda, gateUp, { kernel: override('gate|up') });
          moeDownFp8(cuda, { ...a, h: p.h!, y: p.y!, weights: weightPointers(p) }, { kernel: override('down') });
        };
      return {
        inputs: { ids: s.ids, quantized: words(s.x.bits), scales: s.x.scales, h, ...weightInputs(experts) },
        outputs: [
          ...groupingOutputs(s.rows, g),
          { name: 'gateUpOut', kind: 'bf16', count: pairs * g.intermediate },
          { name: 'y', kind: 'bf16', count: pairs * g.hidden },
        ],
        runs: {
          'narrow tiles, 1 group walked': run('narrow', 1),
          'narrow tiles, 4 groups walked': run('narrow', 4),
          'wide tiles': run('wide'),
        },
      };
    },
  };
}

// Wide tiles of one to a few pairs (real, 16 rows), of 24 pairs (skewed), of about 16 (small, 64 rows) and of 64 plus
// a remainder (small, 300 rows: about 75 pairs an expert); the equivalences at 257 rows, where the backend runs them,
// and 72 rows all on one expert (a wide tile of 64 and one of 8).
export const moeGateUpFp8WideCase: KernelCase = {
  name: 'moe gate|up fp8 + SwiGLU (grouped, wide tiles)',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: GATE_UP_ULPS,
  shapes: [real(1), real(16), real(24, true), small(64), small(300)].map(wide).map(gateUpShape),
  equivalences: [real(257), small(257), real(72, true)].map((o) => tilingsAgree(o, 'gate|up')),
};

export const moeDownFp8WideCase: KernelCase = {
  name: 'moe down fp8 (grouped, h quantised in the kernel, wide tiles)',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 2,
  shapes: [real(1), real(16), real(24, true), small(64), small(300)].map(wide).map(downShape),
  equivalences: [real(257), small(257), real(72, true)].map((o) => tilingsAgree(o, 'down')),
};

export const moeCombineCase: KernelCase = {
  name: 'moe combine (ascending expert id, fp64) + shared expert',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 2,
  shapes: [real(1), real(7), real(64), real(257), small(257)].map(combineShape),
};

export const moeBlockFp8Case: KernelCase = {
  name: 'moe block fp8 (router output → combined rows)',
  bound: BF16_ONE_ROUNDING_BOUND,
  // The chain rounds gate/up, h, its e4m3 quantisation, the expert output and the combine; eight expert rows and the
  // shared expert cancel in the combine, so a few outputs are far smaller than the terms whose roundings they carry:
  // measured on the H200 at 30.6 ulps at worst (seed 12345), the stages alone at ≤ 1.3.
  ulps: 64,
  shapes: [real(1), real(7), real(16), real(24, true), small(64)].map(blockShape),
};

/** A row's outputs alone and inside calls of 2, 7, 64 and 257 rows (different neighbours each time). */
function blockInvariance(
  geometry: MoeGeometry,
  skewed: boolean,
  kernel: { down?: KernelName; combine?: KernelName } = {},
  tiling?: MoeTiling,
): InvarianceCase {
  return {
    label: `${label('MoE block', geometry, 257, skewed)}${tiling === undefined ? '' : `, ${tiling} tiles`}`,
    // Experts and rows from separate streams: the experts are drawn once per geometry (cached), so a shared stream
    // would shift the rows between the first call and the next and break the "same first rows" property.
    prepare(seed, rows) {
      const experts = expertsFor(geometry, new Random(seed));
      const scenario = drawScenario(streamOf(seed, 1), geometry, rows, skewed ? 3 : undefined);
      return blockPrepared(experts, scenario, kernel, tiling);
    },
    elementsPerRow: {
      h: geometry.topK * geometry.intermediate,
      expertOut: geometry.topK * geometry.hidden,
      out: geometry.hidden,
    },
  };
}

// The launcher's choices walk 1 weight group at 1, 2 and 7 rows and 4 at 64 and 257; the wide tiles, used from 512
// rows on, are held to themselves at every row count here (and to the narrow tiles by the wide cases' equivalences).
export const moeInvarianceCases: readonly InvarianceCase[] = [
  blockInvariance(REAL_MOE, false),
  blockInvariance(REAL_MOE, true),
  blockInvariance(SMALL_MOE, false),
  blockInvariance(REAL_MOE, false, {}, 'wide'),
  blockInvariance(SMALL_MOE, false, {}, 'wide'),
];

/** The same invariance case with the combine replaced by a control (moe_controls.cu). */
export function moeBlockInvarianceWith(kernel: { down?: KernelName; combine?: KernelName }): InvarianceCase {
  return blockInvariance(REAL_MOE, false, kernel);
}
