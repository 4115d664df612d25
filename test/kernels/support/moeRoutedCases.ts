// Contract case for a one-row call's FP8 experts in two launches (kernels/cuda/moe_fp8_routed.cuh):
// moe_gate_up_fp8_routed (the router, x's e4m3 quantisation, the grouping and gate|up + SwiGLU) and moe_down_fp8_routed
// (the down GEMM, each choice's expert from the ids). Its ids and weights against the cpu router, its tables exactly
// equal to the reference grouping of those ids, its h against the fp64 reference of the chosen experts on the row
// quantised as quantizeActivationsE4m3 does, its y against the reference down projection of the device's own h (so a
// rounding flip in h is not counted again), at the real geometry and at 8 experts top-2. Its equivalence holds every
// output byte for byte to what the launches they replace write: router_top_k_quantize, moe_gate_up_fp8, moe_down_fp8.
import { routerTopK as routerReference } from '../../../src/backend/cpu/ops/router.ts';
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import { moeDownFp8, moeGateUpFp8 } from '../../../src/backend/cuda/ops/moe.ts';
import { moeDownFp8Routed, moeGateUpFp8Routed } from '../../../src/backend/cuda/ops/moeRouted.ts';
import { routerTopKQuantize } from '../../../src/backend/cuda/ops/routerQuantize.ts';
import { roundToBf16 } from '../../../src/numeric/dtypes.ts';
import {
  BF16_ONE_ROUNDING_BOUND,
  type EquivalenceCase,
  type KernelCase,
  type OutputSpec,
  type Prepared,
  type ShapeCase,
} from './contract.ts';
import { GATE_UP_ULPS } from './moeCases.ts';
import {
  type Fp8Experts,
  type MoeGeometry,
  quantizeRows,
  REAL_MOE,
  referenceDown,
  referenceGateUp,
  SMALL_MOE,
} from './moeReference.ts';
import {
  expertsFor,
  groupingOutputs,
  groupingPointers,
  groupingReference,
  type Pointers,
  weightInputs,
  weightPointers,
} from './moeScenario.ts';
import { type Bf16Tensor, bf16FromValues, plant, type Random, randomBf16 } from './random.ts';

/** The weights' bounds as the router case's (routerQuantizeCases.ts); h's are the gate|up case's. */
const WEIGHT_BOUND = 1e-5;
const WEIGHT_ULPS = 64;
/** The down case's (moeCases.ts). */
const DOWN_ULPS = 2;

interface Row {
  readonly experts: Fp8Experts;
  readonly logits: Bf16Tensor;
  readonly x: Bf16Tensor;
}

function drawRow(random: Random, g: MoeGeometry, nonFinite: boolean): Row {
  const experts = expertsFor(g, random);
  const logits = randomBf16(random, g.experts, 1);
  const values = new Float64Array(g.hidden);
  for (let c = 0; c < g.hidden; c++) values[c] = roundToBf16(random.normal());
  const x = bf16FromValues(values);
  if (nonFinite) {
    // A NaN logit makes every choice fall to experts 0, 1, ... with NaN weights; a NaN in x makes its block's scale NaN.
    plant(logits, 5, Number.NaN);
    plant(x, g.hidden - 3, Number.NaN);
  }
  return { experts, logits, x };
}

function outputs(g: MoeGeometry): OutputSpec[] {
  return [
    ...groupingOutputs(1, g),
    { name: 'ids', kind: 'i32', count: g.topK },
    { name: 'weights', kind: 'f32', count: g.topK, bound: WEIGHT_BOUND, ulps: WEIGHT_ULPS },
    { name: 'h', kind: 'bf16', count: g.topK * g.intermediate },
    { name: 'y', kind: 'bf16', count: g.topK * g.hidden, ulps: DOWN_ULPS },
  ];
}

function inputs(r: Row) {
  return { logits: r.logits, x: r.x, ...weightInputs(r.experts) };
}

/** The two routed launches on the case's buffers (a control in place of the one it names when `kernel` is given). */
function routed(g: MoeGeometry, cuda: CudaContext, p: Pointers, kernel: KernelName | undefined): void {
  const a = { ...groupingPointers(p), ...g, h: p.h!, expertIds: p.ids!, expertWeights: p.weights! };
  const override = (name: string) => (kernel?.name.includes(name) ? kernel : undefined);
  moeGateUpFp8Routed(
    cuda,
    { ...a, logits: p.logits!, x: p.x!, weights: weightPointers(p) },
    { kernel: override('moe_routed_') },
  );
  moeDownFp8Routed(cuda, { ...a, y: p.y!, weights: weightPointers(p) }, { kernel: override('down_routed_') });
}

function routedShape(g: MoeGeometry): ShapeCase {
  return {
    label: `one row, ${g.experts} experts top-${g.topK}, hidden ${g.hidden}`,
    prepare(random, nonFinite): Prepared {
      const r = drawRow(random, g, nonFinite);
      return {
        inputs: inputs(r),
        outputs: outputs(g),
        reference(device) {
          const ids = new Int32Array(g.topK);
          const weights = new Float64Array(g.topK);
          routerReference(r.logits.values, 1, g.experts, g.topK, ids, weights);
          const q = quantizeRows(r.x.values, 1, g.hidden);
          const h = new Float64Array(g.topK * g.intermediate);
          const y = new Float64Array(g.topK * g.hidden);
          const deviceH = device.h as Float64Array;
          for (let k = 0; k < g.topK; k++) {
            h.set(referenceGateUp(r.experts, ids[k]!, q, 0), k * g.intermediate);
            const hRow = deviceH.subarray(k * g.intermediate, (k + 1) * g.intermediate);
            y.set(referenceDown(r.experts, ids[k]!, hRow), k * g.hidden);
          }
          return { ...groupingReference(ids, g), ids, weights, h, y };
        },
        run: (cuda, p, kernel) => routed(g, cuda, p, kernel),
      };
    },
  };
}

/** The routed launches against router_top_k_quantize, moe_gate_up_fp8 and moe_down_fp8 on the same row, byte for byte. */
function routedAgrees(g: MoeGeometry): EquivalenceCase {
  return {
    label: `routed launches and router, gate|up, down agree, one row, ${g.experts} experts top-${g.topK}`,
    prepare(random) {
      const r = drawRow(random, g, false);
      const blocks = g.hidden / 128;
      return {
        inputs: {
          ...inputs(r),
          arrivals: new Int32Array(1),
          quantized: new Int32Array(g.hidden / 4),
          scales: new Float32Array(blocks),
        },
        outputs: outputs(g),
        runs: {
          'routed launches': (cuda, p, kernel) => routed(g, cuda, p, kernel),
          'router, gate|up, down': (cuda, p) => {
            const grouping = { ...groupingPointers(p), arrivals: p.arrivals! };
            const routing = { expertIds: p.ids!, expertWeights: p.weights!, logits: p.logits!, rows: 1, ...g };
            const quantized = { q: p.quantized!, scales: p.scales!, x: p.x!, cols: g.hidden };
            routerTopKQuantize(cuda, { ...routing, ...quantized, grouping });
            const gateUp = { ...grouping, ...g, rows: 1, h: p.h!, quantized: p.quantized!, scales: p.scales! };
            moeGateUpFp8(cuda, { ...gateUp, weights: weightPointers(p) });
            moeDownFp8(cuda, { ...grouping, ...g, rows: 1, h: p.h!, y: p.y!, weights: weightPointers(p) });
          },
        },
      };
    },
  };
}

export const moeGateUpFp8RoutedCase: KernelCase = {
  name: 'moe one row: router + e4m3 of x + grouping + gate|up fp8 in one launch, down fp8 from the ids',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: GATE_UP_ULPS,
  shapes: [REAL_MOE, SMALL_MOE].map(routedShape),
  equivalences: [REAL_MOE, SMALL_MOE].map(routedAgrees),
};
