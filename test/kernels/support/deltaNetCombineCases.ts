// Contract cases for the Gated DeltaNet's consumers of the segmented GEMM's split-K partials (kernels/cuda/delta_net.cuh):
// the conv that reads q|k|v from segment 0's partials (delta_net_conv_silu_partials_bf16), and the gates that read b
// and a from segments 2 and 3's partials while combining z (delta_net_gates_segments_combine_*). The projection is the
// DeltaNet's own (qkv | z | b | a of one x). Against the fp64 reference of each stage, fed the values the GEMM's combine
// stores (the run stores the partials' segments after the consumer has read them, so each stage is judged on its own
// arithmetic); byte for byte against the launches they replace (the GEMM's combine, then the conv or the gates), where
// only a change of the chunks' order or of a rounding point can show; and each row alike in calls of 1 to 257 rows,
// where the calls past 64 rows do not split K and run the combine-free GEMM, the conv and the gates instead.
import { sigmoid, softplus } from '../../../src/backend/cpu/ops/activations.ts';
import { causalConv1dSilu } from '../../../src/backend/cpu/ops/conv.ts';
import { linearBf16 } from '../../../src/backend/cpu/ops/linear.ts';
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import {
  convReadsPartials,
  DELTA_NET_CONV_WIDTH,
  deltaNetConv,
  deltaNetConvPartials,
  deltaNetGates,
  deltaNetGatesSegmentsCombine,
  gatesReadPartials,
} from '../../../src/backend/cuda/ops/deltaNet.ts';
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
import { type Bf16Tensor, bf16FromValues, drawnOnce, plant, type Random, randomBf16, streamOf } from './random.ts';

const HISTORY = DELTA_NET_CONV_WIDTH - 1;
const NAMES = ['mixed', 'z', 'b', 'a'] as const;
const INVARIANCE_ROWS: readonly number[] = [1, 2, 7, 64, 257];

interface Geometry {
  readonly inFeatures: number;
  /** q|k|v channels (segment 0's width), z's width, and the value heads (b's and a's width). */
  readonly channels: number;
  readonly zWidth: number;
  readonly valueHeads: number;
  readonly sequences: Sequences;
  /** Conv slab slots; A_log and dt_bias as bf16 (the checkpoint's) or fp32. */
  readonly slots: number;
  readonly parameterDtype: 'bf16' | 'f32';
}

type Pointers = Readonly<Record<string, bigint>>;
type Run = (cuda: CudaContext, p: Pointers, kernel: KernelName | undefined) => void;

const widths = (g: Geometry) => [g.channels, g.zWidth, g.valueHeads, g.valueHeads];
const rowsOf = (g: Geometry) => sequenceTable(g.sequences).rows;
const longest = (g: Geometry) => Math.max(...g.sequences.map(([, rows]) => rows));

const real = (sequences: Sequences, slots: number, parameterDtype: 'bf16' | 'f32' = 'bf16'): Geometry => ({
  inFeatures: 2048,
  channels: 2 * REAL.keyHeads * REAL.headDim + REAL.valueHeads * REAL.headDim,
  zWidth: REAL.valueHeads * REAL.headDim,
  valueHeads: REAL.valueHeads,
  sequences,
  slots,
  parameterDtype,
});

const odd: Geometry = {
  inFeatures: 1000,
  channels: 999,
  zWidth: 130,
  valueHeads: 5,
  sequences: [
    [4, 5],
    [0, 1],
    [2, 2],
  ],
  slots: 5,
  parameterDtype: 'bf16',
};

function label(g: Geometry): string {
  const rows = rowsOf(g);
  return `${g.inFeatures}→[${widths(g).join(' | ')}], ${rows} row${rows > 1 ? 's' : ''} in ${g.sequences.length} sequences`;
}

interface Drawn {
  readonly x: Bf16Tensor;
  readonly weights: readonly Bf16Tensor[];
  readonly convWeight: Bf16Tensor;
  readonly convState: Bf16Tensor;
  readonly aLog: Bf16Tensor | Float32Array;
  readonly dtBias: Bf16Tensor | Float32Array;
}

type Weight = (index: number, count: number, scale: number) => Bf16Tensor;

/** The weights (index 0-3 the projections, 5 the conv's: drawn once per seed in invariance), then the rest in order. */
function draw(g: Geometry, weight: Weight, parameters: Random, rows: (index: number) => Random): Drawn {
  const half = (count: number) =>
    g.parameterDtype === 'bf16'
      ? randomBf16(parameters, count, 0.5)
      : Float32Array.from({ length: count }, () => 0.5 * parameters.normal());
  return {
    weights: widths(g).map((n, index) => weight(index, n * g.inFeatures, 1 / Math.sqrt(g.inFeatures))),
    convWeight: weight(5, g.channels * DELTA_NET_CONV_WIDTH, 0.5),
    aLog: half(g.valueHeads),
    dtBias: half(g.valueHeads),
    convState: randomBf16(rows(2), g.slots * HISTORY * g.channels, 1),
    x: randomBf16(rows(1), rowsOf(g) * g.inFeatures, 1),
  };
}

/** Every draw from one stream, in order (the shapes and equivalences). */
function drawFrom(g: Geometry, random: Random): Drawn {
  return draw(
    g,
    (_index, count, scale) => randomBf16(random, count, scale),
    random,
    () => random,
  );
}

/** The case's inputs; `scratch` names the projection outputs that are not the case's outputs (zeroed buffers). */
function inputs(g: Geometry, d: Drawn, scratch: readonly (typeof NAMES)[number][]): Record<string, HostInput> {
  const rows = rowsOf(g);
  const separate = widths(g).map((n) => gemmWorkspaceBytes(rows, n, g.inFeatures));
  const bytes = Math.max(gemmSegmentsWorkspaceBytes(rows, g.inFeatures, widths(g)), ...separate, 16);
  const result: Record<string, HostInput> = {
    x: d.x,
    workspace: new Float32Array(bytes / 4),
    convWeight: d.convWeight,
    convState: d.convState,
    aLog: d.aLog,
    dtBias: d.dtBias,
    sequences: sequenceTable(g.sequences).table,
  };
  d.weights.forEach((w, index) => {
    result[`w${index}`] = w;
  });
  for (const name of scratch) result[name] = bf16FromValues(new Float64Array(rows * widths(g)[NAMES.indexOf(name)]!));
  return result;
}

const CONV_SCRATCH = ['z', 'b', 'a'] as const;
const GATES_SCRATCH = ['mixed'] as const;

function segmentsArguments(g: Geometry, p: Pointers) {
  const segments = widths(g).map((outFeatures, index) => ({ y: p[NAMES[index]]!, w: p[`w${index}`]!, outFeatures }));
  return { x: p.x!, rows: rowsOf(g), inFeatures: g.inFeatures, segments, workspace: p.workspace };
}

function convArguments(g: Geometry, p: Pointers) {
  return {
    out: p.out!,
    outRowStride: g.channels,
    weight: p.convWeight!,
    convState: p.convStateOut!,
    sequences: p.sequences!,
    sequenceCount: g.sequences.length,
    longestSequence: longest(g),
    channels: g.channels,
  };
}

function gatesArguments(g: Geometry, p: Pointers) {
  return { g: p.g!, beta: p.beta!, aLog: p.aLog!, dtBias: p.dtBias!, parameterDtype: g.parameterDtype };
}

const slabBytes = (g: Geometry) => g.slots * HISTORY * g.channels * 2;

/** As the DeltaNet block runs the conv: from segment 0's partials where K splits, then the stored q|k|v to judge by. */
function convFused(g: Geometry): Run {
  return (cuda, p, kernel) => {
    copySlab(cuda, p.convStateOut!, p.convState!, slabBytes(g));
    const left = gemmSegments(cuda, segmentsArguments(g, p), { leaveCombine: true });
    if (left !== undefined && convReadsPartials(left, g.channels)) {
      deltaNetConvPartials(cuda, { ...convArguments(g, p), combine: left }, { kernel });
      gemmSegmentsCombine(cuda, left);
      return;
    }
    if (left !== undefined) gemmSegmentsCombine(cuda, left);
    deltaNetConv(cuda, { ...convArguments(g, p), x: p.mixed!, xRowStride: g.channels });
  };
}

/** The launches the conv from partials replaces: the GEMM with its combine, then the conv over the stored q|k|v. */
function convSeparate(g: Geometry): Run {
  return (cuda, p) => {
    copySlab(cuda, p.convStateOut!, p.convState!, slabBytes(g));
    gemmSegments(cuda, segmentsArguments(g, p));
    deltaNetConv(cuda, { ...convArguments(g, p), x: p.mixed!, xRowStride: g.channels });
  };
}

/** As the block runs the gates: from b's and a's partials, storing z, where K splits; then b and a to judge by. */
function gatesFused(g: Geometry): Run {
  return (cuda, p, kernel) => {
    const left = gemmSegments(cuda, segmentsArguments(g, p), { leaveCombine: true });
    if (left !== undefined && gatesReadPartials(left, g.valueHeads)) {
      const combine = left.withoutStoring([0]);
      deltaNetGatesSegmentsCombine(cuda, { ...gatesArguments(g, p), valueHeads: g.valueHeads, combine }, { kernel });
      gemmSegmentsCombine(cuda, left.withoutStoring([0, 1]));
      return;
    }
    if (left !== undefined) gemmSegmentsCombine(cuda, left);
    gatesOverStored(cuda, g, p);
  };
}

function gatesOverStored(cuda: CudaContext, g: Geometry, p: Pointers): void {
  const stored = { b: p.b!, a: p.a!, rowStride: g.valueHeads, rows: rowsOf(g), valueHeads: g.valueHeads };
  deltaNetGates(cuda, { ...gatesArguments(g, p), ...stored });
}

/** The launches the gates combine replaces: the GEMM with its combine, then the gates over the stored b and a. */
function gatesSeparate(g: Geometry): Run {
  return (cuda, p) => {
    gemmSegments(cuda, segmentsArguments(g, p));
    gatesOverStored(cuda, g, p);
  };
}

function projectionOutputs(g: Geometry, names: readonly (typeof NAMES)[number][]): OutputSpec[] {
  const rows = rowsOf(g);
  return names.map((name) => ({
    name,
    kind: 'bf16' as const,
    count: rows * widths(g)[NAMES.indexOf(name)]!,
    bound: BF16_ONE_ROUNDING_BOUND,
    ulps: 1,
  }));
}

function convOutputs(g: Geometry): OutputSpec[] {
  return [
    { name: 'out', kind: 'bf16', count: rowsOf(g) * g.channels },
    { name: 'convStateOut', kind: 'bf16', count: g.slots * HISTORY * g.channels, bound: 0, ulps: 0 },
    ...projectionOutputs(g, ['mixed']),
  ];
}

function gatesOutputs(g: Geometry): OutputSpec[] {
  const count = rowsOf(g) * g.valueHeads;
  return [
    { name: 'g', kind: 'f32', count },
    // As the gates' own case: beta in fp32 storage must lie on the bf16 grid.
    { name: 'beta', kind: 'f32', count, bound: BF16_ONE_ROUNDING_BOUND, ulps: 2 ** 16, heldAsBf16: true },
    ...projectionOutputs(g, ['z', 'b', 'a']),
  ];
}

/** The projections' fp64 sums. */
function sums(g: Geometry, d: Drawn): Float64Array[] {
  const rows = rowsOf(g);
  return widths(g).map((n, index) => {
    const y = new Float64Array(rows * n);
    linearBf16(d.x.values, d.weights[index]!.bits, y, rows, g.inFeatures, n, 'fp64');
    return y;
  });
}

/** The conv of each sequence over q|k|v as the run's combine stored it. */
function convReference(g: Geometry, d: Drawn, mixed: Float64Array): Float64Array[] {
  const { firsts, rows } = sequenceTable(g.sequences);
  const out = new Float64Array(rows * g.channels);
  const convStateOut = Float64Array.from(d.convState.values);
  g.sequences.forEach(([slot, count], index) => {
    const input = mixed.subarray(firsts[index]! * g.channels, (firsts[index]! + count) * g.channels);
    const state = convStateOut.subarray(slot * HISTORY * g.channels, (slot + 1) * HISTORY * g.channels);
    const result = new Float64Array(count * g.channels);
    causalConv1dSilu(input, d.convWeight.values, state, result, count, g.channels, DELTA_NET_CONV_WIDTH);
    out.set(result, firsts[index]! * g.channels);
  });
  return [out, convStateOut];
}

/** The gates over b and a as the run's combine stored them. */
function gatesReference(g: Geometry, d: Drawn, b: Float64Array, a: Float64Array): Float64Array[] {
  const values = (p: Bf16Tensor | Float32Array) => (p instanceof Float32Array ? p : p.values);
  const aLog = values(d.aLog);
  const dtBias = values(d.dtBias);
  const gate = new Float64Array(b.length);
  const beta = new Float64Array(b.length);
  for (let index = 0; index < b.length; index++) {
    const head = index % g.valueHeads;
    gate[index] = -Math.exp(aLog[head]!) * softplus(a[index]! + dtBias[head]!);
    beta[index] = roundToBf16(sigmoid(b[index]!));
  }
  return [gate, beta];
}

/** NaN in x (every output of row 0), ±Inf in a weight row of each segment (one column of each, every row). */
function plantNonFinite(g: Geometry, d: Drawn): void {
  plant(d.x, 0, Number.NaN);
  plant(d.weights[0]!, 3 * g.inFeatures - 1, Number.POSITIVE_INFINITY);
  plant(d.weights[1]!, g.inFeatures + 5, Number.NEGATIVE_INFINITY);
  plant(d.weights[2]!, (g.valueHeads - 1) * g.inFeatures, Number.POSITIVE_INFINITY);
  plant(d.weights[3]!, g.inFeatures - 1, Number.NEGATIVE_INFINITY);
}

function convPrepared(g: Geometry, d: Drawn): Prepared {
  return {
    inputs: inputs(g, d, CONV_SCRATCH),
    outputs: convOutputs(g),
    reference(device) {
      const [out, convStateOut] = convReference(g, d, device.mixed as Float64Array);
      return { out: out!, convStateOut: convStateOut!, mixed: sums(g, d)[0]! };
    },
    run: convFused(g),
  };
}

function gatesPrepared(g: Geometry, d: Drawn): Prepared {
  return {
    inputs: inputs(g, d, GATES_SCRATCH),
    outputs: gatesOutputs(g),
    reference(device) {
      const [gate, beta] = gatesReference(g, d, device.b as Float64Array, device.a as Float64Array);
      const [, z, b, a] = sums(g, d);
      return { g: gate!, beta: beta!, z: z!, b: b!, a: a! };
    },
    run: gatesFused(g),
  };
}

function shape(name: string, g: Geometry, prepared: (g: Geometry, d: Drawn) => Prepared): ShapeCase {
  return {
    label: `${name} ${label(g)}`,
    prepare(random: Random, nonFinite: boolean): Prepared {
      const d = drawFrom(g, random);
      if (nonFinite) plantNonFinite(g, d);
      return prepared(g, d);
    },
  };
}

interface Stage {
  readonly name: string;
  readonly scratch: readonly (typeof NAMES)[number][];
  readonly outputs: (g: Geometry) => OutputSpec[];
  readonly fused: (g: Geometry) => Run;
  readonly separate: (g: Geometry) => Run;
}

const CONV: Stage = {
  name: 'conv',
  scratch: CONV_SCRATCH,
  outputs: convOutputs,
  fused: convFused,
  separate: convSeparate,
};
const GATES: Stage = {
  name: 'gates',
  scratch: GATES_SCRATCH,
  outputs: gatesOutputs,
  fused: gatesFused,
  separate: gatesSeparate,
};

function againstSeparate(stage: Stage) {
  return (g: Geometry): EquivalenceCase => ({
    label: `${stage.name} from partials against the GEMM's combine then the ${stage.name} ${label(g)}`,
    prepare(random: Random) {
      const d = drawFrom(g, random);
      const runs = { separate: stage.separate(g), 'from partials': stage.fused(g) };
      return { inputs: inputs(g, d, stage.scratch), outputs: stage.outputs(g), runs };
    },
  });
}

function invariance(
  stage: Stage,
  prepared: (g: Geometry, d: Drawn) => Prepared,
  elementsPerRow: (g: Geometry) => Record<string, number>,
): InvarianceCase {
  const at = (rows: number) => real(lanes(rows), rows);
  return {
    label: `${stage.name}, decode lanes, real`,
    rowCounts: INVARIANCE_ROWS,
    prepare(seed: number, rows: number): Prepared {
      const g = at(rows);
      const weight: Weight = (index, count, scale) =>
        drawnOnce(`delta_net partials ${index} ${count}`, seed, () =>
          randomBf16(streamOf(seed, 10 + index), count, scale),
        );
      return prepared(
        g,
        draw(g, weight, streamOf(seed, 3), (index) => streamOf(seed, index)),
      );
    },
    elementsPerRow: elementsPerRow(at(1)),
  };
}

const scattered7: Sequences = [9, 0, 4, 15, 2, 7, 11].map((slot) => [slot, 1] as const);
const scattered64: Sequences = Array.from({ length: 64 }, (_, lane) => [(lane * 37) % 64, 1] as const);
const prefill = (rows: number): Geometry => real([[1, rows]], 3);

export const deltaNetConvPartialsCase: KernelCase = {
  name: "delta_net conv + SiLU from the projection's split-K partials",
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    shape('decode, one lane, real', real([[2, 1]], 4), convPrepared),
    shape('decode, 7 lanes at scattered slots, real', real(scattered7, 16), convPrepared),
    shape('decode, 64 lanes, real', real(scattered64, 64), convPrepared),
    shape('prefill chunk, real', prefill(7), convPrepared),
    shape('odd sizes', odd, convPrepared),
    shape('prefill: no split, the GEMM then the conv', prefill(100), convPrepared),
  ],
  invariance: [
    invariance(CONV, convPrepared, (g) => ({
      out: g.channels,
      convStateOut: HISTORY * g.channels,
      mixed: g.channels,
    })),
  ],
  equivalences: [real([[2, 1]], 4), real(scattered7, 16), real(scattered64, 64), prefill(64), odd].map(
    againstSeparate(CONV),
  ),
};

export const deltaNetGatesCombineCase: KernelCase = {
  name: "delta_net gates from b's and a's split-K partials, z combined beside them",
  // The gates' own bounds (fp32 outputs); the projections carry theirs.
  bound: 2e-6,
  ulps: 16,
  shapes: [
    shape('decode, one row, real', real([[2, 1]], 4), gatesPrepared),
    shape('decode, 64 lanes, real', real(scattered64, 64), gatesPrepared),
    shape('odd sizes', odd, gatesPrepared),
    shape('fp32 A_log and dt_bias, 7 lanes, real', real(scattered7, 16, 'f32'), gatesPrepared),
    shape('prefill: no split, the GEMM then the gates', prefill(100), gatesPrepared),
  ],
  invariance: [
    invariance(GATES, gatesPrepared, (g) => ({
      g: g.valueHeads,
      beta: g.valueHeads,
      z: g.zWidth,
      b: g.valueHeads,
      a: g.valueHeads,
    })),
  ],
  equivalences: [real([[2, 1]], 4), real(scattered7, 16, 'f32'), real(scattered64, 64), prefill(64), odd].map(
    againstSeparate(GATES),
  ),
};
