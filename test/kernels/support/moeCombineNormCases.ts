// Contract case for the MoE combine handed straight to the residual add and norm (moe_route.cu,
// moe_combine_add_rms_norm; src/backend/cuda/ops/moeCombineNorm.ts). The new residual is judged against x plus the
// fp64 reference combine stored as the combine stores it (fp64 → fp32 → bf16), the norm against the reference norm of
// the device's own residual (as the add + norm case is judged), at the real geometry (256 experts top-8) and at 8
// experts top-2, with rows of 1 to 257. Its equivalence holds both outputs byte for byte to moe_combine then
// add_rms_norm_bf16, the two launches it replaces, and its invariance holds a row alone to the same row inside calls
// of 2, 7, 64 and 257 rows.
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import { moeCombine } from '../../../src/backend/cuda/ops/moe.ts';
import { moeCombineAddRmsNorm } from '../../../src/backend/cuda/ops/moeCombineNorm.ts';
import { addRmsNorm } from '../../../src/backend/cuda/ops/rmsNorm.ts';
import { roundToBf16 } from '../../../src/numeric/dtypes.ts';
import { rmsNormZeroCentred } from '../../../src/numeric/norms.ts';
import {
  BF16_ONE_ROUNDING_BOUND,
  type EquivalenceCase,
  type InvarianceCase,
  type KernelCase,
  type OutputSpec,
  type Prepared,
  type ShapeCase,
} from './contract.ts';
import { type MoeGeometry, REAL_MOE, SMALL_MOE } from './moeReference.ts';
import { drawScenario, label, type Pointers, referenceOut, type Scenario } from './moeScenario.ts';
import { type Bf16Tensor, plant, type Random, randomBf16, streamOf } from './random.ts';

const EPS = 1e-6;

interface Drawn {
  readonly s: Scenario;
  readonly y: Bf16Tensor;
  readonly residual: Bf16Tensor;
  readonly weight: Bf16Tensor;
}

function draw(random: (index: number) => Random, g: MoeGeometry, rows: number, nonFinite: boolean): Drawn {
  const s = drawScenario(random(0), g, rows);
  const y = randomBf16(random(1), rows * g.topK * g.hidden, 0.2);
  const residual = randomBf16(random(2), rows * g.hidden, 2);
  const weight = randomBf16(random(3), g.hidden, 0.1);
  if (nonFinite) {
    // As the combine's case plants them, and a NaN in the residual itself.
    plant(y, 7, Number.NEGATIVE_INFINITY);
    plant(s.shared, (rows - 1) * g.hidden + 3, Number.POSITIVE_INFINITY);
    plant(s.sharedGate, Math.min(1, rows - 1), Number.NaN);
    if (rows > 2) s.ids[2 * g.topK + 1] = g.experts;
    plant(residual, (rows - 1) * g.hidden + 11, Number.NaN);
  }
  return { s, y, residual, weight };
}

function inputs(d: Drawn) {
  const { s } = d;
  return {
    y: d.y,
    ids: s.ids,
    weights: s.weights,
    shared: s.shared,
    sharedGate: s.sharedGate,
    residual: d.residual,
    weight: d.weight,
  };
}

function outputs(g: MoeGeometry, rows: number): OutputSpec[] {
  return [
    { name: 'sum', kind: 'bf16', count: rows * g.hidden },
    { name: 'out', kind: 'bf16', count: rows * g.hidden },
  ];
}

/** The combine's inputs as the case's buffers hold them. */
function combineInputs(p: Pointers, g: MoeGeometry, rows: number) {
  return {
    expertOut: p.y!,
    expertIds: p.ids!,
    expertWeights: p.weights!,
    sharedOut: p.shared!,
    sharedGate: p.sharedGate!,
    rows,
    topK: g.topK,
    experts: g.experts,
    hidden: g.hidden,
  };
}

/** The fused launch on a copy of the residual (`sum`), so the inputs stay as drawn for the next run. */
function fused(cuda: CudaContext, p: Pointers, d: Drawn, kernel: KernelName | undefined): void {
  const g = d.s.geometry;
  cuda.driver.copyDeviceToDevice(p.sum!, p.residual!, d.residual.bits.byteLength, cuda.stream);
  const norm = { x: p.sum!, out: p.out!, weight: p.weight!, weightDtype: 'bf16' as const, eps: EPS };
  moeCombineAddRmsNorm(cuda, { ...combineInputs(p, g, d.s.rows), ...norm }, { kernel });
}

function prepared(d: Drawn): Prepared {
  const { s } = d;
  const g = s.geometry;
  return {
    inputs: inputs(d),
    outputs: outputs(g, s.rows),
    reference(device) {
      const combined = referenceOut(s, d.y.values, s.shared.values, s.sharedGate.values);
      const sum = new Float64Array(combined.length);
      for (let i = 0; i < sum.length; i++) sum[i] = d.residual.values[i]! + roundToBf16(Math.fround(combined[i]!));
      const out = new Float64Array(sum.length);
      rmsNormZeroCentred(device.sum as Float64Array, d.weight.values, out, s.rows, g.hidden, EPS);
      return { sum, out };
    },
    run: (cuda, p, kernel) => fused(cuda, p, d, kernel),
  };
}

function shape(g: MoeGeometry, rows: number): ShapeCase {
  return {
    label: label('combine + residual add + norm', g, rows, false),
    prepare: (random, nonFinite) => prepared(draw(() => random, g, rows, nonFinite)),
  };
}

/** The fused launch against moe_combine then add_rms_norm_bf16 on the same rows, byte for byte. */
function agrees(g: MoeGeometry, rows: number): EquivalenceCase {
  return {
    label: `${label('combine + add + norm and combine, add_rms_norm', g, rows, false)} agree`,
    prepare(random) {
      const d = draw(() => random, g, rows, false);
      return {
        inputs: { ...inputs(d), combined: new Int32Array((rows * g.hidden) / 2) },
        outputs: outputs(g, rows),
        runs: {
          'one launch': (cuda, p, kernel) => fused(cuda, p, d, kernel),
          'moe_combine, add_rms_norm': (cuda, p) => {
            cuda.driver.copyDeviceToDevice(p.sum!, p.residual!, d.residual.bits.byteLength, cuda.stream);
            moeCombine(cuda, { ...combineInputs(p, g, rows), out: p.combined! });
            const norm = { out: p.out!, x: p.sum!, source: p.combined!, weight: p.weight!, eps: EPS };
            addRmsNorm(cuda, { ...norm, rows, cols: g.hidden });
          },
        },
      };
    },
  };
}

function invariance(g: MoeGeometry): InvarianceCase {
  return {
    label: label('combine + residual add + norm', g, 257, false),
    prepare: (seed, rows) => prepared(draw((index) => streamOf(seed, index), g, rows, false)),
    elementsPerRow: { sum: g.hidden, out: g.hidden },
  };
}

export const moeCombineAddNormCase: KernelCase = {
  name: 'moe combine handed to the residual add + rms_norm zero-centred',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [shape(REAL_MOE, 1), shape(REAL_MOE, 7), shape(REAL_MOE, 64), shape(REAL_MOE, 257), shape(SMALL_MOE, 257)],
  equivalences: [agrees(REAL_MOE, 1), agrees(REAL_MOE, 64), agrees(SMALL_MOE, 257)],
  invariance: [invariance(REAL_MOE)],
};
