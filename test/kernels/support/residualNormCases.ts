// Contract case for the residual norm of a split projection (kernels/cuda/rms_norm.cuh, add_partials_rms_norm_bf16):
// a block's output projection whose split-K partials one launch adds into the residual and norms, in place of the
// GEMM's combine and add_rms_norm_bf16. Against the fp64 reference (the branch rounded to bf16 as the combine stores
// it); byte for byte against the launches it replaces, where only a change of the chunks' order or of a rounding point
// can show; and each row alike in calls of 1 to 257 rows, where the calls past 64 rows do not split K and run the GEMM
// then add_rms_norm_bf16 instead.
import { linearBf16 } from '../../../src/backend/cpu/ops/linear.ts';
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import { gemm, gemmWorkspaceBytes } from '../../../src/backend/cuda/ops/gemm.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import { addPartialsRmsNorm, addRmsNorm } from '../../../src/backend/cuda/ops/rmsNorm.ts';
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
import { type Bf16Tensor, bf16FromValues, drawnOnce, plant, type Random, randomBf16, streamOf } from './random.ts';

const EPS = 1e-6;

interface Geometry {
  readonly rows: number;
  readonly inFeatures: number;
  /** The projection's outputs: the residual's and the norm's width. */
  readonly cols: number;
}

interface Drawn {
  /** The projection's input [rows, inFeatures] and weight [cols, inFeatures]. */
  readonly x: Bf16Tensor;
  readonly w: Bf16Tensor;
  readonly residual: Bf16Tensor;
  readonly norm: Bf16Tensor;
}

function label(g: Geometry): string {
  return `${g.inFeatures}→${g.cols}, ${g.rows} row${g.rows > 1 ? 's' : ''}`;
}

/**
 * The sum is x + branch with the branch one bf16 rounding of an fp32 sum: where that and the fp64 sum round to
 * neighbours, the sum moves by one of the branch's ulps, so its ulps are counted at the larger of the two terms.
 */
function outputs(g: Geometry, d: Drawn): OutputSpec[] {
  const count = g.rows * g.cols;
  const atTerms = (expected: Float64Array) =>
    expected.map((_, i) => Math.max(Math.abs(d.residual.values[i]!), Math.abs(expected[i]! - d.residual.values[i]!)));
  return [
    { name: 'sum', kind: 'bf16', count, ulps: 2, ulpMagnitudes: atTerms },
    { name: 'out', kind: 'bf16', count },
  ];
}

/** The GEMM's inputs and workspace, the residual to copy into `sum`, and the branch as scratch. */
function inputs(g: Geometry, d: Drawn) {
  const bytes = Math.max(gemmWorkspaceBytes(g.rows, g.cols, g.inFeatures), 16);
  return {
    x: d.x,
    w: d.w,
    residual: d.residual,
    norm: d.norm,
    workspace: new Float32Array(bytes / 4),
    branch: bf16FromValues(new Float64Array(g.rows * g.cols)),
  };
}

function projection(g: Geometry, p: Readonly<Record<string, bigint>>) {
  const { rows, inFeatures, cols } = g;
  return { y: p.branch!, x: p.x!, w: p.w!, workspace: p.workspace, rows, outFeatures: cols, inFeatures };
}

function normArguments(g: Geometry, p: Readonly<Record<string, bigint>>) {
  return { out: p.out!, x: p.sum!, weight: p.norm!, rows: g.rows, cols: g.cols, eps: EPS };
}

function copyResidual(cuda: CudaContext, g: Geometry, p: Readonly<Record<string, bigint>>): void {
  cuda.driver.copyDeviceToDevice(p.sum!, p.residual!, g.rows * g.cols * 2, cuda.stream);
}

/** As the cuda backend runs a block's epilogue (residual-norm.ts): the norm reads the partials where K splits. */
function fusedRun(g: Geometry) {
  return (cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) => {
    copyResidual(cuda, g, p);
    const left = gemm(cuda, projection(g, p), { combine: 'caller' });
    if (left === undefined) addRmsNorm(cuda, { ...normArguments(g, p), source: p.branch! });
    else addPartialsRmsNorm(cuda, { ...normArguments(g, p), partials: left.partials, chunks: left.chunks }, { kernel });
  };
}

/** The launches it replaces: the GEMM with its own combine, then add_rms_norm_bf16. */
function separateRun(g: Geometry) {
  return (cuda: CudaContext, p: Readonly<Record<string, bigint>>) => {
    copyResidual(cuda, g, p);
    gemm(cuda, projection(g, p));
    addRmsNorm(cuda, { ...normArguments(g, p), source: p.branch! });
  };
}

function reference(g: Geometry, d: Drawn) {
  const branch = new Float64Array(g.rows * g.cols);
  linearBf16(d.x.values, d.w.bits, branch, g.rows, g.inFeatures, g.cols, 'fp64');
  const sum = branch.map((value, i) => d.residual.values[i]! + roundToBf16(value));
  return { sum };
}

function draw(g: Geometry, random: (index: number) => Random, weight?: () => Bf16Tensor): Drawn {
  const norm = randomBf16(random(0), g.cols, 0.1);
  const w = weight?.() ?? randomBf16(random(1), g.cols * g.inFeatures, 1 / Math.sqrt(g.inFeatures));
  return {
    norm,
    w,
    x: randomBf16(random(2), g.rows * g.inFeatures, 1),
    residual: randomBf16(random(3), g.rows * g.cols, 1),
  };
}

function prepared(g: Geometry, d: Drawn): Prepared {
  return {
    inputs: inputs(g, d),
    outputs: outputs(g, d),
    // The norm is judged from the device's own rounded sum, so one flip of the sum is not counted twice.
    reference: (device) => {
      const { sum } = reference(g, d);
      const out = new Float64Array(g.rows * g.cols);
      rmsNormZeroCentred(device.sum as Float64Array, d.norm.values, out, g.rows, g.cols, EPS);
      return { sum, out };
    },
    run: fusedRun(g),
  };
}

function shape(name: string, g: Geometry): ShapeCase {
  return {
    label: `${name} ${label(g)}`,
    prepare(random: Random, nonFinite: boolean): Prepared {
      const d = draw(g, () => random);
      if (nonFinite) {
        plant(d.x, 0, Number.NaN);
        // +Inf in the last K chunk of the last column's weight row; −Inf in the residual of the last row.
        plant(d.w, d.w.values.length - 1, Number.POSITIVE_INFINITY);
        plant(d.residual, (g.rows - 1) * g.cols + (5 % g.cols), Number.NEGATIVE_INFINITY);
      }
      return prepared(g, d);
    },
  };
}

function againstSeparate(g: Geometry): EquivalenceCase {
  return {
    label: `one norm of the partials against the GEMM's combine and add_rms_norm_bf16 ${label(g)}`,
    prepare(random: Random) {
      const d = draw(g, () => random);
      return { inputs: inputs(g, d), outputs: outputs(g, d), runs: { separate: separateRun(g), fused: fusedRun(g) } };
    },
  };
}

function invariance(inFeatures: number, cols: number): InvarianceCase {
  return {
    label: `rows of ${inFeatures}→${cols}`,
    prepare(seed: number, rows: number): Prepared {
      const g = { rows, inFeatures, cols };
      const weight = () =>
        drawnOnce(`residual norm ${inFeatures}→${cols}`, seed, () =>
          randomBf16(streamOf(seed, 1), cols * inFeatures, 1 / Math.sqrt(inFeatures)),
        );
      const d = draw(g, (index) => streamOf(seed, index), weight);
      return { inputs: inputs(g, d), outputs: outputs(g, d), reference: () => ({}), run: fusedRun(g) };
    },
    elementsPerRow: { sum: cols, out: cols },
  };
}

/** The backbone's attention and DeltaNet output projections; the tower's SwiGLU down projection. */
const backbone = (rows: number): Geometry => ({ rows, inFeatures: 4096, cols: 2048 });
const towerDown = (rows: number): Geometry => ({ rows, inFeatures: 6144, cols: 2048 });

export const residualNormCase: KernelCase = {
  name: 'residual norm of split partials (a projection, residual add + rms_norm, one launch)',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    shape('decode, backbone output projection', backbone(1)),
    shape('decode, tower SwiGLU down', towerDown(1)),
    shape('batch, backbone output projection', backbone(7)),
    shape('odd sizes', { rows: 37, inFeatures: 1000, cols: 999 }),
    shape('batch 64, tower SwiGLU down', towerDown(64)),
    shape('prefill: no split, the GEMM then add_rms_norm_bf16', backbone(100)),
  ],
  invariance: [invariance(4096, 2048), invariance(6144, 2048)],
  equivalences: [backbone(1), backbone(7), backbone(64), towerDown(1), towerDown(64)].map(againstSeparate),
};
