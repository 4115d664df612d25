// Contract case for the SwiGLU combine (kernels/cuda/swiglu.cuh, swiglu_segments_combine_bf16): a segmented GEMM of
// gate, up and (the MoE's shared expert) the router logits and shared gate beside them, whose split-K partials one
// launch turns into h = silu(gate) · up and the other outputs. Against the fp64 reference (gate and up rounded to bf16
// as the GEMM stores them); byte for byte against the launches it replaces (the GEMM's combine, then swiglu_bf16),
// where only a change of the chunks' order or of a rounding point can show; and each row alike in calls of 1 to 257
// rows, where the calls past 64 rows do not split K and run the GEMM and swiglu_bf16 instead.
import { linearBf16 } from '../../../src/backend/cpu/ops/linear.ts';
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import { gemmWorkspaceBytes } from '../../../src/backend/cuda/ops/gemm.ts';
import {
  gemmSegments,
  gemmSegmentsCombine,
  gemmSegmentsWorkspaceBytes,
} from '../../../src/backend/cuda/ops/gemmSegments.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import { combinesIntoSwiglu, swiglu, swigluSegmentsCombine } from '../../../src/backend/cuda/ops/swiglu.ts';
import { roundToBf16 } from '../../../src/numeric/dtypes.ts';
import {
  BF16_ONE_ROUNDING_BOUND,
  type EquivalenceCase,
  type HostInput,
  type InvarianceCase,
  type KernelCase,
  type OutputSpec,
  type Prepared,
  type ShapeCase,
} from './contract.ts';
import { type Bf16Tensor, bf16FromValues, drawnOnce, plant, type Random, randomBf16, streamOf } from './random.ts';

interface Beside {
  readonly outFeatures: number;
  readonly output: 'bf16' | 'f32';
}

interface Geometry {
  readonly rows: number;
  readonly inFeatures: number;
  /** Gate's and up's width (the intermediate size). */
  readonly width: number;
  /** Projections of the same x beside gate and up (the MoE's router logits and shared gate). */
  readonly beside: readonly Beside[];
}

const MOE_BESIDE: readonly Beside[] = [
  { outFeatures: 256, output: 'f32' },
  { outFeatures: 1, output: 'bf16' },
];
const ROW_COUNTS: readonly number[] = [1, 2, 7, 16, 17, 64, 65, 257];
/** The router logits' fp32 sums, as the segmented GEMM's own case holds them. */
const F32_OUTPUT_BOUNDS = { bound: 2e-5, ulps: 64, ulpFloor: 1 } as const;
// Gate and up are each an fp32 sum rounded to bf16; where that and the fp64 sum round to neighbours, h moves by up to
// (1 + |gate|) of gate's ulps, which silu can make a few of h's.
const H_ULPS = 4;

function widths(g: Geometry): number[] {
  return [g.width, g.width, ...g.beside.map((b) => b.outFeatures)];
}

function label(g: Geometry): string {
  const beside = g.beside.map((b) => ` + ${b.outFeatures}${b.output === 'f32' ? ' f32' : ''}`).join('');
  return `${g.inFeatures}→[2 × ${g.width}${beside}], ${g.rows} row${g.rows > 1 ? 's' : ''}`;
}

function outputs(g: Geometry): OutputSpec[] {
  return [
    { name: 'h', kind: 'bf16', count: g.rows * g.width, ulps: H_ULPS },
    ...g.beside.map((b, index) => ({
      name: `y${index + 2}`,
      kind: b.output,
      count: g.rows * b.outFeatures,
      ...(b.output === 'f32' ? F32_OUTPUT_BOUNDS : {}),
    })),
  ];
}

function drawWeights(g: Geometry, draw: (index: number) => Bf16Tensor): Bf16Tensor[] {
  return widths(g).map((_, index) => draw(index));
}

/** x, the weights, the GEMM's workspace, and gate and up as scratch (the fused launch leaves them unwritten). */
function inputs(g: Geometry, x: Bf16Tensor, weights: readonly Bf16Tensor[]): Record<string, HostInput> {
  const all = widths(g);
  const separate = all.map((n) => gemmWorkspaceBytes(g.rows, n, g.inFeatures));
  const bytes = Math.max(gemmSegmentsWorkspaceBytes(g.rows, g.inFeatures, all), ...separate, 16);
  const zeros = (count: number) => bf16FromValues(new Float64Array(count));
  const result: Record<string, HostInput> = {
    x,
    workspace: new Float32Array(bytes / 4),
    gate: zeros(g.rows * g.width),
    up: zeros(g.rows * g.width),
  };
  weights.forEach((w, index) => {
    result[`w${index}`] = w;
  });
  return result;
}

function segments(g: Geometry, p: Readonly<Record<string, bigint>>) {
  const out = (index: number) => (index === 0 ? p.gate! : index === 1 ? p.up! : p[`y${index}`]!);
  return widths(g).map((outFeatures, index) => ({
    y: out(index),
    w: p[`w${index}`]!,
    outFeatures,
    output: index < 2 ? ('bf16' as const) : g.beside[index - 2]!.output,
  }));
}

/** As the SwiGLU block runs it: the combine computes h where gate and up split K, else the GEMM then swiglu_bf16. */
function fusedRun(g: Geometry) {
  return (cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) => {
    const a = { x: p.x!, rows: g.rows, inFeatures: g.inFeatures, segments: segments(g, p), workspace: p.workspace };
    const left = gemmSegments(cuda, a, { leaveCombine: true });
    if (left !== undefined && combinesIntoSwiglu(left)) {
      swigluSegmentsCombine(cuda, { h: p.h!, combine: left }, { kernel });
      return;
    }
    if (left !== undefined) gemmSegmentsCombine(cuda, left);
    swiglu(cuda, { out: p.h!, gate: p.gate!, up: p.up!, rows: g.rows, cols: g.width });
  };
}

/** The launches it replaces: the segmented GEMM with its own combine, then swiglu_bf16. */
function separateRun(g: Geometry) {
  return (cuda: CudaContext, p: Readonly<Record<string, bigint>>) => {
    const a = { x: p.x!, rows: g.rows, inFeatures: g.inFeatures, segments: segments(g, p), workspace: p.workspace };
    gemmSegments(cuda, a);
    swiglu(cuda, { out: p.h!, gate: p.gate!, up: p.up!, rows: g.rows, cols: g.width });
  };
}

function reference(g: Geometry, x: Bf16Tensor, weights: readonly Bf16Tensor[]) {
  const sums = widths(g).map((n, index) => {
    const y = new Float64Array(g.rows * n);
    linearBf16(x.values, weights[index]!.bits, y, g.rows, g.inFeatures, n, 'fp64');
    return y;
  });
  const h = new Float64Array(g.rows * g.width);
  for (let i = 0; i < h.length; i++) {
    const gate = roundToBf16(sums[0]![i]!);
    h[i] = (gate / (1 + Math.exp(-gate))) * roundToBf16(sums[1]![i]!);
  }
  const result: Record<string, Float64Array> = { h };
  g.beside.forEach((_, index) => {
    result[`y${index + 2}`] = sums[index + 2]!;
  });
  return result;
}

function weightOf(random: Random, n: number, inFeatures: number): Bf16Tensor {
  return randomBf16(random, n * inFeatures, 1 / Math.sqrt(inFeatures));
}

function shape(name: string, g: Geometry): ShapeCase {
  return {
    label: `${name} ${label(g)}`,
    prepare(random: Random, nonFinite: boolean): Prepared {
      const x = randomBf16(random, g.rows * g.inFeatures, 1);
      const weights = drawWeights(g, (index) => weightOf(random, widths(g)[index]!, g.inFeatures));
      if (nonFinite) {
        plant(x, 0, Number.NaN);
        // Gate +Inf (silu(+Inf) · up), gate −Inf (silu(−Inf) is NaN), up −Inf, each in its last K chunk.
        plant(weights[0]!, g.inFeatures + g.inFeatures - 1, Number.POSITIVE_INFINITY);
        plant(weights[0]!, weights[0]!.values.length - 1, Number.NEGATIVE_INFINITY);
        plant(weights[1]!, 2 * g.inFeatures + 3, Number.NEGATIVE_INFINITY);
        if (weights.length > 2) plant(weights[2]!, weights[2]!.values.length - 1, Number.POSITIVE_INFINITY);
      }
      return {
        inputs: inputs(g, x, weights),
        outputs: outputs(g),
        reference: () => reference(g, x, weights),
        run: fusedRun(g),
      };
    },
  };
}

function againstSeparate(g: Geometry): EquivalenceCase {
  return {
    label: `one combine against the GEMM's combine and swiglu_bf16 ${label(g)}`,
    prepare(random: Random) {
      const x = randomBf16(random, g.rows * g.inFeatures, 1);
      const weights = drawWeights(g, (index) => weightOf(random, widths(g)[index]!, g.inFeatures));
      return {
        inputs: inputs(g, x, weights),
        outputs: outputs(g),
        runs: { separate: separateRun(g), 'one combine': fusedRun(g) },
      };
    },
  };
}

function invariance(width: number, beside: readonly Beside[]): InvarianceCase {
  const inFeatures = 2048;
  return {
    label: `rows of ${inFeatures}→[2 × ${width}${beside.length > 0 ? ' + router + shared gate' : ''}]`,
    rowCounts: ROW_COUNTS,
    prepare(seed: number, rows: number): Prepared {
      const g = { rows, inFeatures, width, beside };
      const weights = drawWeights(g, (index) =>
        drawnOnce(`swiglu combine ${index} ${inFeatures}→${widths(g)[index]}`, seed, () =>
          weightOf(streamOf(seed, index + 2), widths(g)[index]!, inFeatures),
        ),
      );
      const x = randomBf16(streamOf(seed, 1), rows * inFeatures, 1);
      return { inputs: inputs(g, x, weights), outputs: outputs(g), reference: () => ({}), run: fusedRun(g) };
    },
    elementsPerRow: Object.fromEntries([['h', width], ...beside.map((b, index) => [`y${index + 2}`, b.outFeatures])]),
  };
}

const tower = (rows: number): Geometry => ({ rows, inFeatures: 2048, width: 6144, beside: [] });
const sharedExpert = (rows: number): Geometry => ({ rows, inFeatures: 2048, width: 512, beside: MOE_BESIDE });

export const swigluCombineCase: KernelCase = {
  name: 'swiglu combine (gate|up split-K partials to h, one launch)',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    shape('decode, tower MLP', tower(1)),
    shape('decode, MoE shared expert beside the router', sharedExpert(1)),
    shape('batch, MoE shared expert', sharedExpert(7)),
    shape('odd sizes', {
      rows: 37,
      inFeatures: 1000,
      width: 999,
      beside: [
        { outFeatures: 130, output: 'f32' },
        { outFeatures: 3, output: 'bf16' },
      ],
    }),
    shape('batch 64, tower MLP', tower(64)),
    shape('prefill: no split, the GEMM then swiglu_bf16', sharedExpert(100)),
  ],
  invariance: [invariance(512, MOE_BESIDE), invariance(6144, [])],
  equivalences: [tower(1), tower(7), tower(64), sharedExpert(1), sharedExpert(64)].map(againstSeparate),
};
