// Contract cases for SwiGLU, the MoE router, our GEMV and the cuBLASLt GEMM, with one row, odd sizes and the real
// model's shapes (expert width 512, 256 experts top-8, projections 2048→8192, 4096→2048, 2048→4097); the router also
// at the most its warp holds (512 experts, top-32), and grouping its choices by expert in the same launch (as the
// bf16 experts run it), its tables exactly equal to the reference grouping (routerGrouping.ts).

import { swiglu as swigluReference } from '../../../src/backend/cpu/ops/activations.ts';
import { linearBf16 } from '../../../src/backend/cpu/ops/linear.ts';
import { routerTopK as routerReference } from '../../../src/backend/cpu/ops/router.ts';
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import { CublasLt } from '../../../src/backend/cuda/cublaslt.ts';
import { type GemvOptions, gemv } from '../../../src/backend/cuda/ops/gemv.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import { routerTopK } from '../../../src/backend/cuda/ops/router.ts';
import { swiglu } from '../../../src/backend/cuda/ops/swiglu.ts';
import { BF16_ONE_ROUNDING_BOUND, type KernelCase, type Prepared, type ShapeCase } from './contract.ts';
import { plant, type Random, randomBf16, streamOf } from './random.ts';
import {
  routerGroupingInputs,
  routerGroupingOutputs,
  routerGroupingPointers,
  routerGroupingReference,
} from './routerGrouping.ts';

function swigluShape(label: string, rows: number, cols: number): ShapeCase {
  return {
    label: `${label} [${rows}, ${cols}]`,
    prepare: (random, nonFinite) => swigluPrepared(rows, cols, () => random, nonFinite),
  };
}

function swigluPrepared(rows: number, cols: number, draw: (index: number) => Random, nonFinite: boolean): Prepared {
  const gate = randomBf16(draw(0), rows * cols, 2);
  const up = randomBf16(draw(1), rows * cols, 2);
  if (nonFinite) {
    plant(gate, 0, Number.NaN);
    plant(gate, 1, Number.POSITIVE_INFINITY);
    plant(gate, 2, Number.NEGATIVE_INFINITY);
    plant(up, rows * cols - 1, Number.POSITIVE_INFINITY);
  }
  return {
    inputs: { gate, up },
    outputs: [{ name: 'out', kind: 'bf16', count: rows * cols }],
    reference() {
      const out = new Float64Array(rows * cols);
      swigluReference(gate.values, up.values, out, rows * cols);
      return { out };
    },
    run(cuda, p, kernel) {
      swiglu(cuda, { out: p.out!, gate: p.gate!, up: p.up!, rows, cols }, { kernel });
    },
  };
}

export const swigluCase: KernelCase = {
  name: 'swiglu',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    swigluShape('one row, expert width', 1, 512),
    swigluShape('odd sizes', 37, 1000),
    swigluShape('8 experts x 64 rows, expert width', 512, 512),
    swigluShape('one row, tower width', 1, 6144),
  ],
  invariance: [
    {
      label: 'rows of expert width',
      prepare: (seed, rows) => swigluPrepared(rows, 512, (index) => streamOf(seed, index), false),
      elementsPerRow: { out: 512 },
    },
  ],
};

/** Whether the launch groups, and whether its tables are outputs the case checks or scratch it does not compare. */
type Grouping = 'none' | 'checked' | 'scratch';

function routerShape(label: string, rows: number, experts: number, topK: number, grouping: Grouping): ShapeCase {
  return {
    label: `${label} [${rows}, ${experts}] top-${topK}${grouping === 'none' ? '' : ', grouped'}`,
    prepare: (random, nonFinite) => routerPrepared(rows, experts, topK, random, nonFinite, grouping),
  };
}

function routerPrepared(
  rows: number,
  experts: number,
  topK: number,
  random: Random,
  nonFinite: boolean,
  grouping: Grouping,
): Prepared {
  const logits = randomBf16(random, rows * experts, 1);
  if (nonFinite) {
    plant(logits, 5, Number.NaN);
    if (rows > 1) plant(logits, experts + 7, Number.POSITIVE_INFINITY);
    if (rows > 2) plant(logits, 2 * experts + 9, Number.NEGATIVE_INFINITY);
  }
  const sizes = { rows, experts, topK };
  return {
    inputs: { logits, ...(grouping === 'none' ? {} : routerGroupingInputs(sizes, grouping === 'scratch')) },
    outputs: [
      ...(grouping === 'checked' ? routerGroupingOutputs(sizes) : []),
      { name: 'ids', kind: 'i32', count: rows * topK },
      { name: 'weights', kind: 'f32', count: rows * topK },
    ],
    reference() {
      const ids = new Int32Array(rows * topK);
      const weights = new Float64Array(rows * topK);
      routerReference(logits.values, rows, experts, topK, ids, weights);
      return { ...(grouping === 'checked' ? routerGroupingReference(ids, experts) : {}), ids, weights };
    },
    run(cuda, p, kernel) {
      const a = { expertIds: p.ids!, expertWeights: p.weights!, logits: p.logits!, rows, experts, topK };
      routerTopK(cuda, grouping === 'none' ? a : { ...a, grouping: routerGroupingPointers(p) }, { kernel });
    },
  };
}

export const routerCase: KernelCase = {
  name: 'router softmax + top-k + renormalise',
  bound: 1e-5,
  // fp32 ulps: expf (2 ulps), a 256-term fp32 sum and two divisions, the sum cancelling in the renormalisation.
  ulps: 64,
  shapes: [
    routerShape('one row, real', 1, 256, 8, 'none'),
    routerShape('odd sizes', 37, 100, 3, 'none'),
    routerShape('most experts and choices', 3, 512, 32, 'none'),
    routerShape('prefill chunk, real', 256, 256, 8, 'none'),
    routerShape('one row, real', 1, 256, 8, 'checked'),
    routerShape('odd sizes', 37, 100, 3, 'checked'),
    routerShape('many pairs per expert', 257, 8, 2, 'checked'),
    routerShape('prefill chunk, real', 256, 256, 8, 'checked'),
  ],
  invariance: [
    {
      label: 'rows of 256 experts, top-8',
      prepare: (seed, rows) => routerPrepared(rows, 256, 8, streamOf(seed, 0), false, 'none'),
      elementsPerRow: { ids: 8, weights: 8 },
    },
    {
      label: 'rows of 256 experts, top-8, grouped',
      prepare: (seed, rows) => routerPrepared(rows, 256, 8, streamOf(seed, 0), false, 'scratch'),
      elementsPerRow: { ids: 8, weights: 8 },
    },
  ],
};

type LinearRunner = (
  cuda: CudaContext,
  pointers: { y: bigint; w: bigint; x: bigint },
  rows: number,
  outFeatures: number,
  inFeatures: number,
  kernel: KernelName | undefined,
) => void;

function linearShape(label: string, rows: number, inFeatures: number, outFeatures: number, runner: LinearRunner) {
  return {
    label: `${label} ${inFeatures}→${outFeatures}, ${rows} row${rows > 1 ? 's' : ''}`,
    prepare: (random: Random, nonFinite: boolean) =>
      linearPrepared(rows, inFeatures, outFeatures, runner, () => random, nonFinite),
  } satisfies ShapeCase;
}

function linearPrepared(
  rows: number,
  inFeatures: number,
  outFeatures: number,
  runner: LinearRunner,
  draw: (index: number) => Random,
  nonFinite: boolean,
): Prepared {
  const w = randomBf16(draw(0), outFeatures * inFeatures, 1 / Math.sqrt(inFeatures));
  const x = randomBf16(draw(1), rows * inFeatures, 1);
  if (nonFinite) {
    plant(x, 0, Number.NaN);
    plant(w, inFeatures + 1, Number.POSITIVE_INFINITY);
  }
  return {
    inputs: { x, w },
    outputs: [{ name: 'y', kind: 'bf16' as const, count: rows * outFeatures }],
    reference() {
      const y = new Float64Array(rows * outFeatures);
      linearBf16(x.values, w.bits, y, rows, inFeatures, outFeatures, 'fp64');
      return { y };
    },
    run(cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) {
      runner(cuda, { y: p.y!, w: p.w!, x: p.x! }, rows, outFeatures, inFeatures, kernel);
    },
  };
}

const runGemv: LinearRunner = (cuda, p, rows, outFeatures, inFeatures, kernel) => {
  gemv(cuda, { ...p, rows, outFeatures, inFeatures }, { kernel });
};

export const gemvCase: KernelCase = {
  name: 'gemv bf16 (own kernel)',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    linearShape('decode', 1, 2048, 8192, runGemv),
    linearShape('decode', 1, 4096, 2048, runGemv),
    linearShape('decode', 1, 2048, 4097, runGemv),
    linearShape('odd sizes, scalar path', 3, 1001, 999, runGemv),
    linearShape('odd sizes, vector path', 2, 1000, 37, runGemv),
    linearShape('odd sizes, two stages', 1, 2056, 300, runGemv),
    linearShape('long rows, register path', 2, 5000, 100, runGemv),
  ],
  invariance: [
    {
      label: 'rows of 2048→512',
      prepare: (seed, rows) => linearPrepared(rows, 2048, 512, runGemv, (index) => streamOf(seed, index), false),
      elementsPerRow: { y: 512 },
    },
  ],
};

function gemvWithTuning(tuning: GemvOptions): LinearRunner {
  return (cuda, p, rows, outFeatures, inFeatures, kernel) => {
    gemv(cuda, { ...p, rows, outFeatures, inFeatures }, { ...tuning, kernel });
  };
}

export const gemvOtherTuningsCase: KernelCase = {
  name: 'gemv bf16, other tunings',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    linearShape('plain, 1 block × 3 tiles', 1, 2048, 8192, gemvWithTuning({ dependentLaunch: false, stages: 3 })),
    linearShape('plain', 1, 4096, 2048, gemvWithTuning({ dependentLaunch: false, blocksPerMultiprocessor: 1 })),
    linearShape('5 blocks × 1 tile', 2, 1000, 37, gemvWithTuning({ blocksPerMultiprocessor: 5, stages: 1 })),
    linearShape('4 blocks × 1 tile', 1, 2048, 4097, gemvWithTuning({ blocksPerMultiprocessor: 4, stages: 1 })),
  ],
};

const blasByContext = new WeakMap<CudaContext, CublasLt>();

/** One cuBLASLt handle per context (its workspace is owned there); released by releaseCublas. */
export function cublasFor(cuda: CudaContext): CublasLt {
  let blas = blasByContext.get(cuda);
  if (!blas) {
    blas = new CublasLt(cuda);
    blasByContext.set(cuda, blas);
  }
  return blas;
}

export function releaseCublas(cuda: CudaContext): void {
  blasByContext.get(cuda)?.destroy();
  blasByContext.delete(cuda);
}

const runGemm: LinearRunner = (cuda, p, rows, outFeatures, inFeatures) => {
  cublasFor(cuda).matmul(p.y, p.x, p.w, rows, outFeatures, inFeatures);
};

export const gemmCase: KernelCase = {
  name: 'gemm bf16 (cuBLASLt)',
  // One rounding at the output, like the GEMV; the bounds leave room for split-K algorithms.
  bound: 4e-3,
  ulps: 2,
  shapes: [
    linearShape('one row', 1, 2048, 2048, runGemm),
    linearShape('odd sizes', 33, 1000, 1000, runGemm),
    linearShape('prefill chunk', 16, 2048, 8192, runGemm),
  ],
};
