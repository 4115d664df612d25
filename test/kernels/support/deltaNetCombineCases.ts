// Contract case for the DeltaNet combine (kernels/cuda/delta_net_combine.cuh): the Gated DeltaNet input projection
// q|k|v, z, b, a as one segmented GEMM whose split-K partials one launch turns into the projection's outputs, the
// conv + SiLU over q|k|v with each decode lane's carried history, and the gates. Against the fp64 reference (the
// projections as fp64 sums; the conv and the gates from the run's own bf16 q|k|v, b and a, so that one rounding flip
// of a sum is not counted again downstream); byte for byte against the launches it replaces (the GEMM's own combine,
// delta_net_conv_silu_bf16, delta_net_gates_*); and each lane alike in decode calls of 1 to 64 lanes, where the calls
// past 16 lanes of the real geometry do not split K and run the three launches instead.
import { sigmoid, softplus } from '../../../src/backend/cpu/ops/activations.ts';
import { causalConv1dSilu } from '../../../src/backend/cpu/ops/conv.ts';
import { linearBf16 } from '../../../src/backend/cpu/ops/linear.ts';
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import { DELTA_NET_CONV_WIDTH, deltaNetConv, deltaNetGates } from '../../../src/backend/cuda/ops/deltaNet.ts';
import { combinesIntoDeltaNet, deltaNetSegmentsCombine } from '../../../src/backend/cuda/ops/deltaNetCombine.ts';
import { gemmWorkspaceBytes } from '../../../src/backend/cuda/ops/gemm.ts';
import {
  gemmSegments,
  gemmSegmentsCombine,
  gemmSegmentsWorkspaceBytes,
} from '../../../src/backend/cuda/ops/gemmSegments.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
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
import { copySlab, lanes, REAL, type Sequences, sequenceTable } from './deltaNetCases.ts';
import { type Bf16Tensor, drawnOnce, plant, type Random, randomBf16, streamOf } from './random.ts';

const HISTORY = DELTA_NET_CONV_WIDTH - 1;
const PROJECTIONS = ['mixed', 'z', 'b', 'a'] as const;

interface Geometry {
  readonly inFeatures: number;
  /** q|k|v channels. */
  readonly channels: number;
  readonly zWidth: number;
  readonly valueHeads: number;
  readonly slots: number;
  /** One row each: (slot, 1). */
  readonly sequences: Sequences;
  /** How A_log and dt_bias are stored. */
  readonly parameterDtype: 'f32' | 'bf16';
}

const real = (slots: number, sequences: Sequences, parameterDtype: 'f32' | 'bf16' = 'f32'): Geometry => ({
  inFeatures: 2048,
  channels: 2 * REAL.keyHeads * REAL.headDim + REAL.valueHeads * REAL.headDim,
  zWidth: REAL.valueHeads * REAL.headDim,
  valueHeads: REAL.valueHeads,
  slots,
  sequences,
  parameterDtype,
});

const rowsOf = (g: Geometry) => g.sequences.length;
const widths = (g: Geometry) => [g.channels, g.zWidth, g.valueHeads, g.valueHeads];

function label(g: Geometry): string {
  const parameters = g.parameterDtype === 'bf16' ? ', bf16 A_log and dt_bias' : '';
  return `${g.inFeatures}→[${widths(g).join(' | ')}], ${rowsOf(g)} lane${rowsOf(g) > 1 ? 's' : ''}${parameters}`;
}

function outputs(g: Geometry): OutputSpec[] {
  const rows = rowsOf(g);
  return [
    ...PROJECTIONS.map((name, index) => ({ name, kind: 'bf16' as const, count: rows * widths(g)[index]! })),
    { name: 'convolved', kind: 'bf16', count: rows * g.channels },
    // Copies of bf16 values: the history shifted and the lane's q|k|v row as the run stored it.
    { name: 'convStateOut', kind: 'bf16', count: g.slots * HISTORY * g.channels, bound: 0, ulps: 0 },
    // fp32 from bf16 inputs: expf, log1pf and a + dt_bias's rounding, amplified a few times by softplus.
    { name: 'g', kind: 'f32', count: rows * g.valueHeads, bound: 2e-6, ulps: 16 },
    // beta is rounded to bf16 in fp32 storage (deltaNetCases.ts's gates case says why these bounds).
    {
      name: 'beta',
      kind: 'f32',
      count: rows * g.valueHeads,
      bound: BF16_ONE_ROUNDING_BOUND,
      ulps: 2 ** 16,
      heldAsBf16: true,
    },
  ];
}

interface Drawn {
  readonly x: Bf16Tensor;
  readonly weights: readonly Bf16Tensor[];
  readonly convWeight: Bf16Tensor;
  readonly convState: Bf16Tensor;
  readonly aLog: Bf16Tensor | Float32Array;
  readonly dtBias: Bf16Tensor | Float32Array;
}

/** Parameters first, then x, each from its own stream, so that an invariance case's first lanes repeat. */
function draw(g: Geometry, stream: (index: number) => Random, weight: (index: number) => Bf16Tensor): Drawn {
  const parameters = stream(6);
  const vector = () =>
    g.parameterDtype === 'bf16'
      ? randomBf16(parameters, g.valueHeads, 0.5)
      : Float32Array.from({ length: g.valueHeads }, () => 0.5 * parameters.normal());
  const aLog = vector();
  const dtBias = vector();
  return {
    weights: widths(g).map((_, index) => weight(index)),
    convWeight: randomBf16(stream(4), g.channels * DELTA_NET_CONV_WIDTH, 0.5),
    convState: randomBf16(stream(5), g.slots * HISTORY * g.channels, 1),
    aLog,
    dtBias,
    x: randomBf16(stream(7), rowsOf(g) * g.inFeatures, 1),
  };
}

function weightOf(random: Random, n: number, inFeatures: number): Bf16Tensor {
  return randomBf16(random, n * inFeatures, 1 / Math.sqrt(inFeatures));
}

const valuesOf = (v: Bf16Tensor | Float32Array): ArrayLike<number> => (v instanceof Float32Array ? v : v.values);

/** The drawn tensors, the sequence table, the GEMM's workspace and the conv history to copy into convStateOut. */
function inputs(g: Geometry, d: Drawn): Record<string, HostInput> {
  const rows = rowsOf(g);
  const separate = widths(g).map((n) => gemmWorkspaceBytes(rows, n, g.inFeatures));
  const bytes = Math.max(gemmSegmentsWorkspaceBytes(rows, g.inFeatures, widths(g)), ...separate, 16);
  const result: Record<string, HostInput> = {
    x: d.x,
    convWeight: d.convWeight,
    convState: d.convState,
    aLog: d.aLog,
    dtBias: d.dtBias,
    sequences: sequenceTable(g.sequences).table,
    workspace: new Float32Array(bytes / 4),
  };
  d.weights.forEach((w, index) => {
    result[`w${index}`] = w;
  });
  return result;
}

function segments(g: Geometry, p: Readonly<Record<string, bigint>>) {
  return widths(g).map((outFeatures, index) => ({
    y: p[PROJECTIONS[index]!]!,
    w: p[`w${index}`]!,
    outFeatures,
  }));
}

function projection(g: Geometry, p: Readonly<Record<string, bigint>>) {
  return { x: p.x!, rows: rowsOf(g), inFeatures: g.inFeatures, segments: segments(g, p), workspace: p.workspace };
}

/** The conv and the gates as their own launches, after the projection's combine. */
function convAndGates(cuda: CudaContext, p: Readonly<Record<string, bigint>>, g: Geometry): void {
  const rows = rowsOf(g);
  deltaNetConv(cuda, {
    out: p.convolved!,
    outRowStride: g.channels,
    x: p.mixed!,
    xRowStride: g.channels,
    weight: p.convWeight!,
    convState: p.convStateOut!,
    sequences: p.sequences!,
    sequenceCount: rows,
    longestSequence: 1,
    channels: g.channels,
  });
  deltaNetGates(cuda, {
    g: p.g!,
    beta: p.beta!,
    b: p.b!,
    a: p.a!,
    rowStride: g.valueHeads,
    aLog: p.aLog!,
    dtBias: p.dtBias!,
    parameterDtype: g.parameterDtype,
    rows,
    valueHeads: g.valueHeads,
  });
}

/**
 * As delta-net-block.ts runs a decode call with the combine on: one combine where q|k|v splits K, else the GEMM's
 * combine, the conv and the gates. A control (`kernel`) is named by its fp32-parameter entry; its bf16-parameter
 * twin carries the suffix the real kernels' does.
 */
function combinedRun(g: Geometry) {
  return (cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) => {
    copySlab(cuda, p.convStateOut!, p.convState!, g.slots * HISTORY * g.channels * 2);
    const left = gemmSegments(cuda, projection(g, p), { leaveCombine: true });
    if (left !== undefined && combinesIntoDeltaNet(left)) {
      const chosen =
        kernel && g.parameterDtype === 'bf16' ? { ...kernel, name: `${kernel.name}_bf16_parameters` } : kernel;
      const a = {
        combine: left,
        convolved: p.convolved!,
        convWeight: p.convWeight!,
        convState: p.convStateOut!,
        sequences: p.sequences!,
        sequenceCount: rowsOf(g),
        g: p.g!,
        beta: p.beta!,
        aLog: p.aLog!,
        dtBias: p.dtBias!,
        parameterDtype: g.parameterDtype,
      };
      deltaNetSegmentsCombine(cuda, a, { kernel: chosen });
      return;
    }
    if (left !== undefined) gemmSegmentsCombine(cuda, left);
    convAndGates(cuda, p, g);
  };
}

/** The launches it replaces: the segmented GEMM with its own combine, the conv, the gates. */
function separateRun(g: Geometry) {
  return (cuda: CudaContext, p: Readonly<Record<string, bigint>>) => {
    copySlab(cuda, p.convStateOut!, p.convState!, g.slots * HISTORY * g.channels * 2);
    gemmSegments(cuda, projection(g, p));
    convAndGates(cuda, p, g);
  };
}

function reference(g: Geometry, d: Drawn, device: Readonly<Record<string, Float64Array | Int32Array>>) {
  const rows = rowsOf(g);
  const result: Record<string, Float64Array> = {};
  widths(g).forEach((n, index) => {
    const y = new Float64Array(rows * n);
    linearBf16(d.x.values, d.weights[index]!.bits, y, rows, g.inFeatures, n, 'fp64');
    result[PROJECTIONS[index]!] = y;
  });
  // The conv from the run's own q|k|v (bf16), one row per lane, with the lane's history.
  const mixed = device.mixed as Float64Array;
  const convolved = new Float64Array(rows * g.channels);
  const convStateOut = Float64Array.from(d.convState.values);
  g.sequences.forEach(([slot], row) => {
    const state = convStateOut.subarray(slot * HISTORY * g.channels, (slot + 1) * HISTORY * g.channels);
    const out = convolved.subarray(row * g.channels, (row + 1) * g.channels);
    const input = mixed.subarray(row * g.channels, (row + 1) * g.channels);
    causalConv1dSilu(input, d.convWeight.values, state, out, 1, g.channels, DELTA_NET_CONV_WIDTH);
  });
  // The gates from the run's own b and a.
  const b = device.b as Float64Array;
  const a = device.a as Float64Array;
  const aLog = valuesOf(d.aLog);
  const dtBias = valuesOf(d.dtBias);
  const gate = new Float64Array(rows * g.valueHeads);
  const beta = new Float64Array(rows * g.valueHeads);
  for (let i = 0; i < gate.length; i++) {
    const head = i % g.valueHeads;
    gate[i] = -Math.exp(aLog[head]!) * softplus(a[i]! + dtBias[head]!);
    beta[i] = roundToBf16(sigmoid(b[i]!));
  }
  return { ...result, convolved, convStateOut, g: gate, beta };
}

function shape(name: string, g: Geometry): ShapeCase {
  return {
    label: `${name} ${label(g)}`,
    prepare(random: Random, nonFinite: boolean): Prepared {
      const d = draw(
        g,
        () => random,
        (index) => weightOf(random, widths(g)[index]!, g.inFeatures),
      );
      if (nonFinite) {
        plant(d.x, 1, Number.NaN);
        const [slot] = g.sequences[rowsOf(g) - 1]!;
        plant(d.convState, (slot * HISTORY + HISTORY - 1) * g.channels + 2, Number.POSITIVE_INFINITY);
        // a +Inf weight in b's last K chunk, a −Inf in a's.
        plant(d.weights[2]!, g.inFeatures - 1, Number.POSITIVE_INFINITY);
        plant(d.weights[3]!, d.weights[3]!.values.length - 1, Number.NEGATIVE_INFINITY);
      }
      return {
        inputs: inputs(g, d),
        outputs: outputs(g),
        reference: (device) => reference(g, d, device),
        run: combinedRun(g),
      };
    },
  };
}

function againstSeparate(g: Geometry): EquivalenceCase {
  return {
    label: `one combine against the GEMM's combine, the conv and the gates ${label(g)}`,
    prepare(random: Random) {
      const d = draw(
        g,
        () => random,
        (index) => weightOf(random, widths(g)[index]!, g.inFeatures),
      );
      return {
        inputs: inputs(g, d),
        outputs: outputs(g),
        runs: { separate: separateRun(g), 'one combine': combinedRun(g) },
      };
    },
  };
}

const invariance: InvarianceCase = {
  label: 'decode lanes of the real projection (past 16 lanes it does not split: the three launches)',
  rowCounts: [1, 2, 7, 16, 17, 64],
  prepare(seed: number, rows: number): Prepared {
    const g = real(rows, lanes(rows));
    const weight = (index: number) =>
      drawnOnce(`delta_net combine ${index} ${g.inFeatures}→${widths(g)[index]}`, seed, () =>
        weightOf(streamOf(seed, index), widths(g)[index]!, g.inFeatures),
      );
    const d = draw(g, (index) => streamOf(seed, index), weight);
    return {
      inputs: inputs(g, d),
      outputs: outputs(g),
      reference: () => ({}),
      run: combinedRun(g),
    };
  },
  elementsPerRow: {
    mixed: REAL.keyHeads * 256 + REAL.valueHeads * 128,
    z: REAL.valueHeads * 128,
    b: REAL.valueHeads,
    a: REAL.valueHeads,
    convolved: REAL.keyHeads * 256 + REAL.valueHeads * 128,
    convStateOut: HISTORY * (REAL.keyHeads * 256 + REAL.valueHeads * 128),
    g: REAL.valueHeads,
    beta: REAL.valueHeads,
  },
};

const scattered7 = [9, 0, 4, 15, 2, 7, 11].map((slot) => [slot, 1] as const);
const scattered16 = Array.from({ length: 16 }, (_, lane) => [(lane * 5) % 16, 1] as const);
const odd: Geometry = {
  inFeatures: 520,
  channels: 999,
  zWidth: 130,
  valueHeads: 5,
  slots: 4,
  sequences: [
    [3, 1],
    [0, 1],
    [2, 1],
  ],
  parameterDtype: 'f32',
};

export const deltaNetCombineCase: KernelCase = {
  name: "delta_net combine (the input projection's split-K partials to q|k|v, z, b, a, the conv and the gates)",
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    shape('decode, one lane', real(4, [[2, 1]])),
    shape('decode, 7 lanes at scattered slots', real(16, scattered7)),
    shape('decode, 16 lanes', real(16, scattered16, 'bf16')),
    shape('odd sizes', odd),
    shape('past 16 lanes: no split, the three launches', real(17, lanes(17))),
  ],
  invariance: [invariance],
  equivalences: [
    real(4, [[2, 1]]),
    real(16, scattered7),
    real(16, scattered16, 'bf16'),
    odd,
    { ...odd, parameterDtype: 'bf16' as const },
  ].map(againstSeparate),
};
