// Contract case for the attention's q|k|v projection combined into its prepare (kernels/cuda/attention_qkv_prepare.cuh):
// q (per head [query | gate] when gated), k and v as one segmented GEMM whose split-K partials one launch turns into
// the projection's outputs, the normed and rotated q, and K and V appended to the slabs. Against the fp64 reference
// (the projections as fp64 sums; the prepare from the run's own bf16 projections, so that one rounding flip of a sum
// is not counted again downstream); byte for byte against the two launches it replaces (the GEMM's own combine, then
// attention_prepare_bf16), also with a row outside the slabs; and each lane alike in decode calls of 1 to 64 lanes,
// where the calls that do not split K run the two launches instead.
import { linearBf16 } from '../../../src/backend/cpu/ops/linear.ts';
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import { attentionPrepare } from '../../../src/backend/cuda/ops/attention.ts';
import { attentionQkvPrepare, combinesIntoAttention } from '../../../src/backend/cuda/ops/attentionQkvPrepare.ts';
import { gemmWorkspaceBytes } from '../../../src/backend/cuda/ops/gemm.ts';
import {
  gemmSegments,
  gemmSegmentsCombine,
  gemmSegmentsWorkspaceBytes,
} from '../../../src/backend/cuda/ops/gemmSegments.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import {
  ATTENTION_EPS,
  ATTENTION_THETA,
  type AttentionGeometry,
  BACKBONE,
  type CallRows,
  ODD_D64,
  preparedHeads,
  rowTable,
  TOWER,
  zerosBf16,
} from './attentionReference.ts';
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
import { type Bf16Tensor, drawnOnce, plant, type Random, randomBf16, streamOf } from './random.ts';
import { rotatedPairMagnitudes } from './ulps.ts';

type Pointers = Readonly<Record<string, bigint>>;
const PROJECTIONS = ['qProj', 'kProj', 'vProj'] as const;
const IN_FEATURES = 2048;

interface Call {
  readonly g: AttentionGeometry;
  readonly slots: number;
  readonly capacity: number;
  readonly rows: CallRows;
}

const rowsOf = (c: Call) => c.rows.slots.length;
const widths = (g: AttentionGeometry) => [
  g.queryHeads * g.headDim * (g.gated ? 2 : 1),
  g.kvHeads * g.headDim,
  g.kvHeads * g.headDim,
];
const slabElements = (c: Call) => c.slots * c.capacity * c.g.kvHeads * c.g.headDim;

function label(c: Call): string {
  return `${c.g.label}, ${IN_FEATURES}→[${widths(c.g).join(' | ')}], ${rowsOf(c)} lane${rowsOf(c) > 1 ? 's' : ''}`;
}

/** Lanes at slots and positions given in pairs. */
function call(g: AttentionGeometry, slots: number, capacity: number, lanes: readonly (readonly [number, number])[]) {
  const rows: CallRows = {
    slots: Int32Array.from(lanes, ([slot]) => slot),
    positions: Int32Array.from(lanes, ([, position]) => position),
  };
  return { g, slots, capacity, rows };
}

function outputs(c: Call): OutputSpec[] {
  const { g } = c;
  const rows = rowsOf(c);
  const atPairNorms = (expected: Float64Array) => rotatedPairMagnitudes(expected, g.headDim, g.rotaryDims, g.style);
  return [
    ...PROJECTIONS.map((name, index) => ({ name, kind: 'bf16' as const, count: rows * widths(g)[index]! })),
    { name: 'q', kind: 'bf16', count: rows * g.queryHeads * g.headDim, ulpMagnitudes: atPairNorms },
    { name: 'keys', kind: 'bf16', count: slabElements(c), ulpMagnitudes: atPairNorms },
    { name: 'values', kind: 'bf16', count: slabElements(c) },
  ];
}

interface Drawn {
  readonly x: Bf16Tensor;
  readonly weights: readonly Bf16Tensor[];
  readonly qNorm: Bf16Tensor;
  readonly kNorm: Bf16Tensor;
}

/** The norms first, then x, each from its own stream, so that an invariance case's first lanes repeat. */
function draw(c: Call, stream: (index: number) => Random, weight: (index: number) => Bf16Tensor): Drawn {
  return {
    weights: widths(c.g).map((_, index) => weight(index)),
    qNorm: randomBf16(stream(3), c.g.headDim, 0.1),
    kNorm: randomBf16(stream(4), c.g.headDim, 0.1),
    x: randomBf16(stream(5), rowsOf(c) * IN_FEATURES, 1),
  };
}

function weightOf(random: Random, n: number): Bf16Tensor {
  return randomBf16(random, n * IN_FEATURES, 1 / Math.sqrt(IN_FEATURES));
}

function inputs(c: Call, d: Drawn): Record<string, HostInput> {
  const rows = rowsOf(c);
  const separate = widths(c.g).map((n) => gemmWorkspaceBytes(rows, n, IN_FEATURES));
  const bytes = Math.max(gemmSegmentsWorkspaceBytes(rows, IN_FEATURES, widths(c.g)), ...separate, 16);
  const result: Record<string, HostInput> = {
    x: d.x,
    qNorm: d.qNorm,
    kNorm: d.kNorm,
    rowTable: rowTable(c.rows),
    initialKeys: zerosBf16(slabElements(c)),
    initialValues: zerosBf16(slabElements(c)),
    workspace: new Float32Array(bytes / 4),
  };
  d.weights.forEach((w, index) => {
    result[`w${index}`] = w;
  });
  return result;
}

function projection(c: Call, p: Pointers) {
  const segments = widths(c.g).map((outFeatures, index) => ({
    y: p[PROJECTIONS[index]!]!,
    w: p[`w${index}`]!,
    outFeatures,
  }));
  return { x: p.x!, rows: rowsOf(c), inFeatures: IN_FEATURES, segments, workspace: p.workspace };
}

function prepareArguments(c: Call, p: Pointers) {
  const { g } = c;
  return {
    queryHeads: g.queryHeads,
    kvHeads: g.kvHeads,
    headDim: g.headDim,
    slots: c.slots,
    capacity: c.capacity,
    qOut: p.q!,
    keys: p.keys!,
    values: p.values!,
    qNorm: p.qNorm!,
    kNorm: p.kNorm!,
    rowTable: p.rowTable!,
    rows: rowsOf(c),
    rotaryDims: g.rotaryDims,
    theta: ATTENTION_THETA,
    style: g.style,
    gated: g.gated,
    eps: ATTENTION_EPS,
  };
}

function resetSlabs(cuda: CudaContext, c: Call, p: Pointers): void {
  cuda.driver.copyDeviceToDevice(p.keys!, p.initialKeys!, slabElements(c) * 2, cuda.stream);
  cuda.driver.copyDeviceToDevice(p.values!, p.initialValues!, slabElements(c) * 2, cuda.stream);
}

function separatePrepare(cuda: CudaContext, c: Call, p: Pointers): void {
  attentionPrepare(cuda, { ...prepareArguments(c, p), qProj: p.qProj!, kProj: p.kProj!, vProj: p.vProj! });
}

/**
 * The one launch wherever q|k|v splits K, else the two: wider than attention-block.ts, which takes the one launch only
 * up to PREPARE_IN_PROJECTION_MOST_ROWS rows, so the kernel is held at every row count it can run.
 */
function fusedRun(c: Call) {
  return (cuda: CudaContext, p: Pointers, kernel: KernelName | undefined) => {
    resetSlabs(cuda, c, p);
    const left = gemmSegments(cuda, projection(c, p), { leaveCombine: true });
    const prepare = prepareArguments(c, p);
    if (left !== undefined && combinesIntoAttention(left, prepare)) {
      attentionQkvPrepare(cuda, { ...prepare, combine: left }, { kernel });
      return;
    }
    if (left !== undefined) gemmSegmentsCombine(cuda, left);
    separatePrepare(cuda, c, p);
  };
}

/** The launches it replaces: the segmented GEMM with its own combine, then the prepare. */
function separateRun(c: Call) {
  return (cuda: CudaContext, p: Pointers) => {
    resetSlabs(cuda, c, p);
    gemmSegments(cuda, projection(c, p));
    separatePrepare(cuda, c, p);
  };
}

function reference(c: Call, d: Drawn, device: Readonly<Record<string, Float64Array | Int32Array>>) {
  const { g, rows: lanes } = c;
  const rows = rowsOf(c);
  const { queryHeads: hq, kvHeads: hkv, headDim: dim } = g;
  const result: Record<string, Float64Array> = {};
  widths(g).forEach((n, index) => {
    const y = new Float64Array(rows * n);
    linearBf16(d.x.values, d.weights[index]!.bits, y, rows, IN_FEATURES, n, 'fp64');
    result[PROJECTIONS[index]!] = y;
  });
  // The prepare from the run's own bf16 projections.
  const qProj = device.qProj as Float64Array;
  const kProj = device.kProj as Float64Array;
  const vProj = device.vProj as Float64Array;
  const q = preparedHeads(g, qProj, dim * (g.gated ? 2 : 1), hq, d.qNorm.values, lanes.positions);
  const k = preparedHeads(g, kProj, dim, hkv, d.kNorm.values, lanes.positions);
  const keys = new Float64Array(slabElements(c));
  const values = new Float64Array(slabElements(c));
  for (let row = 0; row < rows; row++) {
    const target = (lanes.slots[row]! * c.capacity + lanes.positions[row]!) * hkv * dim;
    keys.set(k.subarray(row * hkv * dim, (row + 1) * hkv * dim), target);
    values.set(vProj.subarray(row * hkv * dim, (row + 1) * hkv * dim), target);
  }
  return { ...result, q, keys, values };
}

function shape(name: string, c: Call): ShapeCase {
  return {
    label: `${name}, ${label(c)}`,
    prepare(random: Random, nonFinite: boolean): Prepared {
      const d = draw(
        c,
        () => random,
        (index) => weightOf(random, widths(c.g)[index]!),
      );
      if (nonFinite) {
        plant(d.x, 1, Number.NaN);
        // A +Inf weight in k's last K chunk.
        plant(d.weights[1]!, IN_FEATURES - 1, Number.POSITIVE_INFINITY);
      }
      return {
        inputs: inputs(c, d),
        outputs: outputs(c),
        reference: (device) => reference(c, d, device),
        run: fusedRun(c),
      };
    },
  };
}

function againstSeparate(c: Call): EquivalenceCase {
  return {
    label: `one launch against the GEMM's combine and the prepare, ${label(c)}`,
    prepare(random: Random) {
      const d = draw(
        c,
        () => random,
        (index) => weightOf(random, widths(c.g)[index]!),
      );
      return {
        inputs: inputs(c, d),
        outputs: outputs(c),
        runs: { separate: separateRun(c), 'one launch': fusedRun(c) },
      };
    },
  };
}

const INVARIANCE_CAPACITY = 300;

const invariance: InvarianceCase = {
  label: 'backbone decode lanes (calls that do not split K run the two launches)',
  rowCounts: [1, 2, 7, 16, 17, 64],
  prepare(seed: number, rows: number): Prepared {
    const positions = streamOf(seed, 6);
    const lanes = Array.from({ length: rows }, (_, lane) => [lane, positions.integer(INVARIANCE_CAPACITY)] as const);
    const c = call(BACKBONE, rows, INVARIANCE_CAPACITY, lanes);
    const weight = (index: number) =>
      drawnOnce(`attention q|k|v prepare ${index} ${IN_FEATURES}→${widths(c.g)[index]}`, seed, () =>
        weightOf(streamOf(seed, index), widths(c.g)[index]!),
      );
    const d = draw(c, (index) => streamOf(seed, index), weight);
    return { inputs: inputs(c, d), outputs: outputs(c), reference: () => ({}), run: fusedRun(c) };
  },
  elementsPerRow: {
    qProj: widths(BACKBONE)[0]!,
    kProj: widths(BACKBONE)[1]!,
    vProj: widths(BACKBONE)[2]!,
    q: BACKBONE.queryHeads * BACKBONE.headDim,
    keys: INVARIANCE_CAPACITY * BACKBONE.kvHeads * BACKBONE.headDim,
    values: INVARIANCE_CAPACITY * BACKBONE.kvHeads * BACKBONE.headDim,
  },
};

const oneLane = call(BACKBONE, 4, 300, [[2, 257]]);
const sevenLanes = call(BACKBONE, 16, 2100, [
  [9, 0],
  [0, 63],
  [4, 64],
  [15, 1023],
  [2, 1024],
  [7, 2049],
  [11, 5],
]);
const tower = call(TOWER, 3, 700, [
  [1, 0],
  [0, 600],
  [2, 31],
]);
const odd = call(ODD_D64, 3, 1100, [
  [2, 1],
  [0, 1030],
]);
// A row whose slot lies outside the slabs: q NaN, no slab rows, the projection's outputs as ever.
const outside = call(BACKBONE, 2, 300, [
  [1, 7],
  [5, 3],
  [0, 299],
]);

export const attentionQkvPrepareCase: KernelCase = {
  name: "attention q|k|v prepare (the projection's split-K partials to q|k|v, q/k norm, RoPE, KV append)",
  bound: BF16_ONE_ROUNDING_BOUND,
  // As the prepare's case: norm then RoPE, each rounded to bf16, ulps counted at the rotated pair's norm.
  ulps: 2,
  shapes: [
    shape('decode, one lane', oneLane),
    shape('decode, 7 lanes around split points', sevenLanes),
    shape('decode, tower', tower),
    shape('decode, odd geometry', odd),
  ],
  invariance: [invariance],
  equivalences: [oneLane, sevenLanes, tower, odd, outside].map(againstSeparate),
};
