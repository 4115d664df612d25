// Contract case for the MoE combine fused with the residual add and zero-centred norm after it
// (kernels/cuda/moe_combine_norm.cu): per row, x = bf16(x + combine(row)) written back and out = norm(x). Against the
// fp64 reference (the combine's one rounding fp64 → fp32 → bf16 as the kernel stores it, the add's rounding, and the
// norm of the device's own x); byte for byte against the launches it replaces (moe_combine, then add_rms_norm_bf16 or
// its f32-weight form), where only a change of the combine's order, of a rounding point or of the norm's reduction
// order can show; and each row alike in calls of 1 to 257 rows. A hidden of 1032 gives the norm 288 threads, some
// holding three columns; top-16 runs the second group of ranks. Row 2 of the planted, equivalence and invariance runs
// holds an expert id out of range: the whole row NaN, as moe_combine makes it.
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import { moeCombine, moeCombineAddRmsNorm } from '../../../src/backend/cuda/ops/moe.ts';
import { addRmsNorm, type NormWeightDtype } from '../../../src/backend/cuda/ops/rmsNorm.ts';
import { roundToBf16 } from '../../../src/numeric/dtypes.ts';
import { rmsNormZeroCentred } from '../../../src/numeric/norms.ts';
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
import { type MoeGeometry, REAL_MOE, randomRoutingRow, referenceCombineRow, SMALL_MOE } from './moeReference.ts';
import { type Bf16Tensor, bf16FromValues, plant, type Random, randomBf16, randomFloat32, streamOf } from './random.ts';

const EPS = 1e-6;
const ODD_MOE: MoeGeometry = { ...REAL_MOE, hidden: 1032 };
const WIDE_MOE: MoeGeometry = { hidden: 1032, intermediate: 512, experts: 64, topK: 16 };

interface Geometry {
  readonly moe: MoeGeometry;
  readonly rows: number;
  readonly weightDtype: NormWeightDtype;
}

interface Drawn {
  readonly ids: Int32Array;
  readonly weights: Float32Array;
  /** [rows · topK, hidden] expert outputs by slot. */
  readonly y: Bf16Tensor;
  readonly shared: Bf16Tensor;
  readonly sharedGate: Bf16Tensor;
  /** The residual stream before the add. */
  readonly residual: Bf16Tensor;
  /** The norm weight: bf16 values, or any fp32 values in the f32-weight form. */
  readonly norm: Bf16Tensor | Float32Array;
}

/**
 * The norm weight from `draw(0)`, then each tensor's rows in order from its own stream (any prefix of rows repeats).
 * With `nanRow`, row 2 (where the call has it) holds an expert id past the last, so moe_combine makes the row NaN.
 */
function drawInputs(g: Geometry, draw: (index: number) => Random, nanRow: boolean): Drawn {
  const { hidden, topK, experts } = g.moe;
  const norm = g.weightDtype === 'f32' ? randomFloat32(draw(0), hidden, 0.1) : randomBf16(draw(0), hidden, 0.1);
  const ids = new Int32Array(g.rows * topK);
  const weights = new Float32Array(g.rows * topK);
  const routing = draw(1);
  for (let row = 0; row < g.rows; row++) randomRoutingRow(routing, g.moe, ids, weights, row);
  const drawn = {
    ids,
    weights,
    y: randomBf16(draw(2), g.rows * topK * hidden, 0.2),
    shared: randomBf16(draw(3), g.rows * hidden, 0.05),
    sharedGate: randomBf16(draw(4), g.rows, 1),
    residual: randomBf16(draw(5), g.rows * hidden, 1),
    norm,
  };
  if (nanRow && g.rows > 2) ids[2 * topK + 1] = experts;
  return drawn;
}

function normValues(norm: Bf16Tensor | Float32Array): Float32Array | Float64Array {
  return norm instanceof Float32Array ? norm : norm.values;
}

function outputs(g: Geometry): OutputSpec[] {
  const count = g.rows * g.moe.hidden;
  return [
    { name: 'x', kind: 'bf16', count },
    { name: 'out', kind: 'bf16', count },
  ];
}

/** The combine rounded as moe_combine stores it, the add in fp64, and the norm of the device's own x. */
function reference(g: Geometry, d: Drawn, device: Readonly<Record<string, Float64Array | Int32Array>>) {
  const { hidden, topK, experts } = g.moe;
  const x = new Float64Array(g.rows * hidden);
  const combined = new Float64Array(hidden);
  for (let row = 0; row < g.rows; row++) {
    referenceCombineRow(
      (k, c) => d.y.values[(row * topK + k) * hidden + c]!,
      d.ids.subarray(row * topK, (row + 1) * topK),
      d.weights.subarray(row * topK, (row + 1) * topK),
      (c) => d.shared.values[row * hidden + c]!,
      d.sharedGate.values[row]!,
      experts,
      hidden,
      combined,
    );
    for (let c = 0; c < hidden; c++)
      x[row * hidden + c] = d.residual.values[row * hidden + c]! + roundToBf16(combined[c]!);
  }
  const out = new Float64Array(g.rows * hidden);
  rmsNormZeroCentred(device.x as Float64Array, normValues(d.norm), out, g.rows, hidden, EPS);
  return { x, out };
}

/** The drawn tensors, and the combined rows the separate launches pass between them (left unwritten by the fused). */
function hostInputs(g: Geometry, d: Drawn): Record<string, HostInput> {
  return {
    ids: d.ids,
    weights: d.weights,
    y: d.y,
    shared: d.shared,
    sharedGate: d.sharedGate,
    residual: d.residual,
    norm: d.norm,
    combined: bf16FromValues(new Float64Array(g.rows * g.moe.hidden)),
  };
}

type Run = (cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) => void;

/** The residual rows copied into the output x, which every run then adds to in place. */
function withResidual(g: Geometry, run: Run): Run {
  return (cuda, p, kernel) => {
    cuda.driver.copyDeviceToDevice(p.x!, p.residual!, g.rows * g.moe.hidden * 2, cuda.stream);
    run(cuda, p, kernel);
  };
}

function routing(g: Geometry, p: Readonly<Record<string, bigint>>) {
  const { hidden, topK, experts } = g.moe;
  return {
    expertOut: p.y!,
    expertIds: p.ids!,
    expertWeights: p.weights!,
    sharedOut: p.shared!,
    sharedGate: p.sharedGate!,
    rows: g.rows,
    topK,
    experts,
    hidden,
  };
}

function fusedRun(g: Geometry): Run {
  return withResidual(g, (cuda, p, kernel) => {
    const norm = { out: p.out!, x: p.x!, weight: p.norm!, weightDtype: g.weightDtype, eps: EPS };
    moeCombineAddRmsNorm(cuda, { ...routing(g, p), ...norm }, { kernel });
  });
}

/** The launches it replaces: moe_combine into the combined rows, then the residual add and norm. */
function separateRun(g: Geometry): Run {
  return withResidual(g, (cuda, p) => {
    moeCombine(cuda, { ...routing(g, p), out: p.combined! });
    addRmsNorm(cuda, {
      out: p.out!,
      x: p.x!,
      source: p.combined!,
      weight: p.norm!,
      weightDtype: g.weightDtype,
      rows: g.rows,
      cols: g.moe.hidden,
      eps: EPS,
    });
  });
}

function label(g: Geometry): string {
  const { hidden, experts, topK } = g.moe;
  const weight = g.weightDtype === 'f32' ? ', f32 norm weight' : '';
  return `${g.rows} row${g.rows > 1 ? 's' : ''} of ${hidden}, ${experts} experts top-${topK}${weight}`;
}

function shape(g: Geometry): ShapeCase {
  return {
    label: label(g),
    prepare(random: Random, nonFinite: boolean): Prepared {
      const d = drawInputs(g, () => random, nonFinite);
      const { hidden, topK } = g.moe;
      if (nonFinite) {
        plant(d.y, 7, Number.NEGATIVE_INFINITY);
        plant(d.shared, (g.rows - 1) * hidden + 3, Number.POSITIVE_INFINITY);
        plant(d.sharedGate, Math.min(1, g.rows - 1), Number.NaN);
        plant(d.residual, (g.rows - 1) * hidden + 11, Number.NaN);
        if (g.rows > 3) plant(d.y, 3 * topK * hidden + 5, Number.NaN);
      }
      return {
        inputs: hostInputs(g, d),
        outputs: outputs(g),
        reference: (device) => reference(g, d, device),
        run: fusedRun(g),
      };
    },
  };
}

function againstSeparate(g: Geometry): EquivalenceCase {
  return {
    label: `one launch against moe_combine then the residual add and norm, ${label(g)}`,
    prepare(random: Random) {
      const d = drawInputs(g, () => random, true);
      return {
        inputs: hostInputs(g, d),
        outputs: outputs(g),
        runs: { separate: separateRun(g), 'one launch': fusedRun(g) },
      };
    },
  };
}

function invariance(moe: MoeGeometry, weightDtype: NormWeightDtype): InvarianceCase {
  return {
    label: label({ moe, rows: 257, weightDtype }),
    prepare(seed: number, rows: number): Prepared {
      const g = { moe, rows, weightDtype };
      const d = drawInputs(g, (index) => streamOf(seed, index), true);
      return { inputs: hostInputs(g, d), outputs: outputs(g), reference: () => ({}), run: fusedRun(g) };
    },
    elementsPerRow: { x: moe.hidden, out: moe.hidden },
  };
}

const real = (rows: number, weightDtype: NormWeightDtype = 'bf16') => of(REAL_MOE, rows, weightDtype);
function of(moe: MoeGeometry, rows: number, weightDtype: NormWeightDtype = 'bf16'): Geometry {
  return { moe, rows, weightDtype };
}

// bf16 norm weights first: the control (a bf16-weight kernel) is caught before any f32-weight shape would run it.
export const moeCombineNormCase: KernelCase = {
  name: 'moe combine + residual add + rms_norm zero-centred (one launch)',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    real(1),
    real(7),
    real(64),
    of(SMALL_MOE, 257),
    of(ODD_MOE, 37),
    of(WIDE_MOE, 7),
    real(7, 'f32'),
    of(ODD_MOE, 5, 'f32'),
  ].map(shape),
  invariance: [invariance(REAL_MOE, 'bf16'), invariance(ODD_MOE, 'f32')],
  equivalences: [
    real(1),
    real(7),
    real(64),
    real(257),
    of(SMALL_MOE, 64),
    of(ODD_MOE, 37),
    of(WIDE_MOE, 7),
    real(1, 'f32'),
    real(64, 'f32'),
    of(ODD_MOE, 7, 'f32'),
  ].map(againstSeparate),
};
