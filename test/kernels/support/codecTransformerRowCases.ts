// Contract cases for the codec transformer's row-wise kernels (kernels/cuda/codec_transformer.cu): RMSNorm against
// the cpu norm the codec calls (src/numeric/norms.ts) and SwiGLU against the layer's line (transformer.ts),
// at the real widths (dim 1024, SwiGLU 3072) and odd sizes, with rows alone and in larger calls.
import { codecRmsNorm, codecSwiGlu } from '../../../src/backend/cuda/ops/codecTransformer.ts';
import { rmsNorm } from '../../../src/numeric/norms.ts';
import { widen } from './codecCases.ts';
import { ONE_ROUNDING_BOUND, ONE_ROUNDING_ULPS } from './codecTransformerCases.ts';
import type { KernelCase, Prepared, ShapeCase } from './contract.ts';
import { type Random, randomFloat32, streamOf } from './random.ts';

/** The cpu layer's SwiGLU line (transformer.ts) over [gate | up] rows: out[r, i] = fround(silu(gate)) · up. */
export function referenceSwiGlu(gateUp: Float32Array, rows: number, intermediate: number): Float32Array {
  const out = new Float32Array(rows * intermediate);
  for (let row = 0; row < rows; row++) {
    for (let i = 0; i < intermediate; i++) {
      const value = gateUp[row * 2 * intermediate + i]!;
      const up = gateUp[row * 2 * intermediate + intermediate + i]!;
      out[row * intermediate + i] = Math.fround(value / (1 + Math.exp(-value))) * up;
    }
  }
  return out;
}

const REAL_DIM = 1024;
const REAL_INTERMEDIATE = 3072;
const NORM_EPS = 1e-5;

function normPrepared(rows: number, width: number, draw: (index: number) => Random, nonFinite: boolean): Prepared {
  const weight = randomFloat32(draw(0), width, 1);
  const x = randomFloat32(draw(1), rows * width, 1);
  if (nonFinite) {
    x[1] = Number.NaN;
    if (rows > 1) x[width + 2] = Number.POSITIVE_INFINITY;
  }
  return {
    inputs: { x, weight },
    outputs: [{ name: 'out', kind: 'f32', count: rows * width }],
    reference: () => {
      const out = new Float32Array(rows * width);
      rmsNorm(x, weight, out, rows, width, NORM_EPS);
      return { out: widen(out) };
    },
    run(cuda, p, kernel) {
      codecRmsNorm(cuda, { out: p.out!, x: p.x!, weight: p.weight!, rows, width, eps: NORM_EPS }, { kernel });
    },
  };
}

const normShape = (label: string, rows: number, width: number): ShapeCase => ({
  label: `${label} [${rows} × ${width}]`,
  prepare: (random, nonFinite) => normPrepared(rows, width, () => random, nonFinite),
});

export const codecTransformerRmsNormCase: KernelCase = {
  name: 'codec transformer RMSNorm (fp32 rows, fp64 sums)',
  bound: ONE_ROUNDING_BOUND,
  ulps: ONE_ROUNDING_ULPS,
  shapes: [normShape('one row, real', 1, REAL_DIM), normShape('frames, real', 40, REAL_DIM), normShape('odd', 37, 45)],
  invariance: [
    {
      label: 'rows at dim 1024',
      prepare: (seed, rows) => normPrepared(rows, REAL_DIM, (index) => streamOf(seed, index), false),
      elementsPerRow: { out: REAL_DIM },
    },
  ],
};

function swiGluPrepared(rows: number, intermediate: number, random: Random, nonFinite: boolean): Prepared {
  const gateUp = randomFloat32(random, rows * 2 * intermediate, 2);
  if (nonFinite) {
    gateUp[0] = Number.NaN;
    gateUp[1] = Number.NEGATIVE_INFINITY;
    gateUp[2] = Number.POSITIVE_INFINITY;
    gateUp[intermediate + 3] = Number.POSITIVE_INFINITY;
  }
  return {
    inputs: { gateUp },
    outputs: [{ name: 'out', kind: 'f32', count: rows * intermediate }],
    reference: () => ({ out: widen(referenceSwiGlu(gateUp, rows, intermediate)) }),
    run(cuda, p, kernel) {
      codecSwiGlu(cuda, { out: p.out!, gateUp: p.gateUp!, rows, intermediate }, { kernel });
    },
  };
}

export const codecTransformerSwiGluCase: KernelCase = {
  name: 'codec transformer SwiGLU fround(silu(gate)) · up',
  bound: ONE_ROUNDING_BOUND,
  ulps: ONE_ROUNDING_ULPS,
  shapes: [
    {
      label: `one row, real [1 × ${REAL_INTERMEDIATE}]`,
      prepare: (r, n) => swiGluPrepared(1, REAL_INTERMEDIATE, r, n),
    },
    { label: 'odd [37 × 45]', prepare: (random, nonFinite) => swiGluPrepared(37, 45, random, nonFinite) },
  ],
};
