// The kernel contract (ARCHITECTURE.md, contract 6): every kernel, on fresh random inputs at each of its shapes, is
// held to these gates against the cpu backend's fp64 reference:
//   accuracy   ‖out − ref‖₂ / ‖ref‖₂ within the kernel's stated bound (integer outputs: exactly equal)
//   ulps       every element within the case's bound in ulps of the output dtype (ulps.ts); the first few
//              elements over it are printed; an fp32 output held as bf16 values has none off the bf16 grid
//   written    outputs are poisoned with a NaN payload no kernel produces before every run; none may survive
//   repeat     five runs give bit-identical outputs
//   graph      the same launches captured in a CUDA graph and replayed give the direct launch's bytes
//   layout     every launched kernel's parameters (cuFuncGetParamInfo) have the sizes its launcher passed
//   non-finite with NaN/±Inf planted in the inputs, each output element is NaN, +Inf, −Inf or finite exactly where
//              the reference's is (integer outputs: exactly equal)
//   invariance rows alone and inside larger calls give the same bytes (schedules.ts)
//   equivalence every named launch schedule of the same work gives the same bytes as the first (schedules.ts)
// Controls (deliberately wrong kernels with the same signatures) run through the same gates and must be caught.
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import type { Handle } from '../../../src/backend/cuda/driver.ts';
import { type KernelName, observeLaunches } from '../../../src/backend/cuda/ops/launch.ts';
import { decode, execute, poisonedCount } from './execution.ts';
import type { Bf16Tensor, Random } from './random.ts';
import { runEquivalence, runInvariance, type ScheduleResult } from './schedules.ts';
import { compareUlps, offBf16Grid } from './ulps.ts';

export type OutputKind = 'bf16' | 'f32' | 'f64' | 'i32';
export type HostInput = Bf16Tensor | Int32Array | Float32Array | Float64Array;

export interface OutputSpec {
  readonly name: string;
  readonly kind: OutputKind;
  readonly count: number;
  /** This output's own norm bound (else it counts toward the case's `bound` with the other float outputs). */
  readonly bound?: number;
  /** This output's own ulp bound (else the case's `ulps`). */
  readonly ulps?: number;
  /** Below this fraction of the output's RMS, ulps are counted at that magnitude (ulps.ts; default 2⁻⁸). */
  readonly ulpFloor?: number;
  /** Per element, a magnitude to count ulps at where larger than the reference's own (ulps.ts). */
  readonly ulpMagnitudes?: (expected: Float64Array) => Float64Array;
  /** An fp32 output rounded to bf16 in fp32 storage: an element off the bf16 grid fails the ulps gate. */
  readonly heldAsBf16?: boolean;
}

/** One shape's inputs, its reference and how to launch the kernel on them. */
export interface Prepared {
  readonly inputs: Readonly<Record<string, HostInput>>;
  readonly outputs: readonly OutputSpec[];
  /**
   * The fp64 reference outputs, by name (integer outputs as Int32Array). A chain of stages may take a later stage's
   * input from `device` (the run's own earlier outputs, decoded), so that each stage is judged on its own arithmetic
   * and one bf16 rounding flip upstream is not counted again, amplified, in every stage after it.
   */
  reference(device: Readonly<Record<string, Float64Array | Int32Array>>): Record<string, Float64Array | Int32Array>;
  run(cuda: CudaContext, pointers: Readonly<Record<string, bigint>>, kernel: KernelName | undefined): void;
}

export interface ShapeCase {
  readonly label: string;
  /** Fresh inputs; with `nonFinite`, NaN and ±Inf planted where the kernel must carry them through. */
  prepare(random: Random, nonFinite: boolean): Prepared;
}

/**
 * Batch invariance: row r's outputs must be bit-identical whether the call holds 1, 2, 7, 64 or 257 rows (a "row" is
 * whatever the kernel batches: a token row, a lane of a decode step, a sequence). `prepare(seed, rows)` must draw
 * every weight and state first and then the rows in order, so that the first r rows are the same for any rows ≥ r.
 */
export interface InvarianceCase {
  readonly label: string;
  /** Row counts to compare; the largest is the run the others are checked against. Default [1, 2, 7, 64, 257]. */
  readonly rowCounts?: readonly number[];
  prepare(seed: number, rows: number): Prepared;
  /** Elements of each output that belong to one row (outputs are row-major by that row). */
  readonly elementsPerRow: Readonly<Record<string, number>>;
}

/**
 * Launch schedules that must give bit-identical outputs on the same inputs: a whole prefill against the same rows
 * cut into chunks (1, 7, 64, ...), a lane alone against the lane beside others. Every schedule in `runs` is run on
 * freshly uploaded inputs and compared byte for byte with the first.
 */
export interface EquivalenceCase {
  readonly label: string;
  prepare(random: Random): {
    readonly inputs: Readonly<Record<string, HostInput>>;
    readonly outputs: readonly OutputSpec[];
    readonly runs: Readonly<
      Record<
        string,
        (cuda: CudaContext, pointers: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) => void
      >
    >;
  };
}

export interface KernelCase {
  readonly name: string;
  /** Bound on ‖out − ref‖₂ / ‖ref‖₂ over the float outputs. */
  readonly bound: number;
  /** Per-element bound in ulps of the output dtype: 1 for one rounding of an fp32 result, more for long fp32 chains. */
  readonly ulps: number;
  readonly shapes: readonly ShapeCase[];
  readonly invariance?: readonly InvarianceCase[];
  readonly equivalences?: readonly EquivalenceCase[];
}

export interface ShapeResult {
  readonly label: string;
  readonly error: number;
  readonly worstUlps: number;
  readonly integerMismatches: number;
  readonly unwritten: number;
  readonly repeatable: boolean;
  readonly graphIdentical: boolean;
  readonly nonFiniteMismatches: number;
  /** Elements over the ulp bound, graph differences: the first few, for the failure message. */
  readonly details: readonly string[];
}

export interface CaseResult {
  readonly name: string;
  readonly bound: number;
  readonly ulps: number;
  readonly shapes: readonly ShapeResult[];
  readonly schedules: readonly ScheduleResult[];
  /** Kernels whose parameter sizes differ from what their launcher passed, one line each. */
  readonly layoutMismatches: readonly string[];
  readonly failedGates: readonly string[];
}

/** One rounding of an exact result to bf16 gives about 1.65e-3 on normal data; truncating gives about 3.3e-3. */
export const BF16_ONE_ROUNDING_BOUND = 2.2e-3;
/** The most one correct rounding to bf16 can be off, relative to the value: the unit roundoff 2^-8. */
export const BF16_UNIT_ROUNDOFF = 2 ** -8;
/** Fewer elements than this make the one-rounding norm a small sample, which correct rounding can take past it. */
const STATISTICAL_ELEMENTS = 256;

/**
 * The norm bound a group of `elements` values is held to: the one-rounding bound is a statistical figure (the RMS
 * over many elements), so a small output is held to the worst case of correctly rounded values instead (its every
 * element still answers to the ulps gate). Other bounds are returned as they are.
 */
export function normBound(bound: number, elements: number): number {
  return bound === BF16_ONE_ROUNDING_BOUND && elements < STATISTICAL_ELEMENTS ? BF16_UNIT_ROUNDOFF : bound;
}

const REPEATS = 5;

function classify(value: number): number {
  if (Number.isNaN(value)) return 0;
  if (value === Number.POSITIVE_INFINITY) return 1;
  if (value === Number.NEGATIVE_INFINITY) return 2;
  return 3;
}

/** Each output of one run beside its reference: decoded values and how many elements still hold the poison. */
function besideReference(prepared: Prepared, run: Uint8Array[]) {
  const actual = prepared.outputs.map((spec, index) => decode(spec.kind, run[index]!, spec.count));
  const device = Object.fromEntries(prepared.outputs.map((spec, index) => [spec.name, actual[index]!]));
  const reference = prepared.reference(device);
  return prepared.outputs.map((spec, index) => ({
    spec,
    poisoned: poisonedCount(spec.kind, run[index]!, spec.count),
    actual: actual[index]!,
    expected: reference[spec.name]!,
  }));
}

function compareAccuracy(kernelCase: KernelCase, prepared: Prepared, run: Uint8Array[]) {
  // Norm errors per group: outputs with their own bound alone, the rest together against the case's bound.
  const groups = new Map<string, { bound: number; elements: number; squaredError: number; squaredReference: number }>();
  let integerMismatches = 0;
  let unwritten = 0;
  let worstUlps = 0;
  const details: string[] = [];
  let ulpsFailed = false;
  for (const { spec, poisoned, actual, expected } of besideReference(prepared, run)) {
    unwritten += poisoned;
    if (spec.kind === 'i32') {
      for (let element = 0; element < spec.count; element++)
        if (actual[element] !== expected[element]) integerMismatches++;
      continue;
    }
    const key = spec.bound === undefined ? '' : spec.name;
    const group = groups.get(key) ?? {
      bound: spec.bound ?? kernelCase.bound,
      elements: 0,
      squaredError: 0,
      squaredReference: 0,
    };
    groups.set(key, group);
    group.elements += spec.count;
    for (let element = 0; element < spec.count; element++) {
      const difference = actual[element]! - expected[element]!;
      group.squaredError += Number.isNaN(difference) ? Number.POSITIVE_INFINITY : difference * difference;
      group.squaredReference += expected[element]! * expected[element]!;
    }
    const ulpBound = spec.ulps ?? kernelCase.ulps;
    const ulps = compareUlps(
      spec.name,
      spec.kind,
      actual as Float64Array,
      expected as Float64Array,
      ulpBound,
      spec.ulpFloor,
      spec.ulpMagnitudes?.(expected as Float64Array),
    );
    if (spec.heldAsBf16) {
      const off = offBf16Grid(spec.name, actual as Float64Array);
      if (off.count > 0) {
        ulpsFailed = true;
        details.push(`${off.count} elements of ${spec.name} off the bf16 grid, first: ${off.examples.join('; ')}`);
      }
    }
    worstUlps = Math.max(worstUlps, ulps.worst);
    if (ulps.over > 0) {
      ulpsFailed = true;
      details.push(`${ulps.over} elements of ${spec.name} over ${ulpBound} ulps, first: ${ulps.examples.join('; ')}`);
    }
  }
  let error = 0;
  let normFailed = false;
  for (const group of groups.values()) {
    const relative =
      group.squaredReference > 0
        ? Math.sqrt(group.squaredError / group.squaredReference)
        : Math.sqrt(group.squaredError);
    error = Math.max(error, relative);
    if (!(relative <= normBound(group.bound, group.elements))) normFailed = true;
  }
  return { error, normFailed, worstUlps, ulpsFailed, integerMismatches, unwritten, details };
}

function compareNonFinite(prepared: Prepared, run: Uint8Array[]): { mismatches: number; unwritten: number } {
  let mismatches = 0;
  let unwritten = 0;
  for (const { spec, poisoned, actual, expected } of besideReference(prepared, run)) {
    unwritten += poisoned;
    for (let element = 0; element < spec.count; element++) {
      const equal =
        spec.kind === 'i32'
          ? actual[element] === expected[element]
          : classify(actual[element]!) === classify(expected[element]!);
      if (!equal) mismatches++;
    }
  }
  return { mismatches, unwritten };
}

function sameRun(a: readonly Uint8Array[], b: readonly Uint8Array[]): boolean {
  return a.every((bytes, index) => Buffer.compare(bytes, b[index]!) === 0);
}

/** Records the argument sizes of every launch while `work` runs; checks each kernel once against its parameters. */
function checkLayouts(cuda: CudaContext, work: () => void): string[] {
  const seen = new Map<string, { handle: Handle; sizes: readonly number[] }>();
  const mismatches = new Set<string>();
  const previous = observeLaunches((kernel, handle, args) => {
    const key = `${kernel.family}/${kernel.name}`;
    const known = seen.get(key);
    if (known === undefined) seen.set(key, { handle, sizes: [...args.sizes] });
    else if (known.sizes.join(',') !== args.sizes.join(',')) {
      mismatches.add(`${key} launched with argument sizes [${known.sizes}] and [${args.sizes}]`);
    }
  });
  try {
    work();
  } finally {
    observeLaunches(previous);
  }
  for (const [key, { handle, sizes }] of seen) {
    const parameters = cuda.driver.parameterLayout(handle).map((parameter) => parameter.size);
    if (parameters.join(',') !== sizes.join(',')) {
      mismatches.add(`${key} takes parameters of [${parameters}] bytes but its launcher passed [${sizes}]`);
    }
  }
  return [...mismatches];
}

/**
 * Runs every shape, invariance and equivalence of the case through every gate. With `untilCaught` (a control: caught
 * once any gate fails on any shape) it stops after the first shape or schedule that fails a gate.
 */
export function runCase(
  cuda: CudaContext,
  kernelCase: KernelCase,
  random: Random,
  kernel: KernelName | undefined = undefined,
  untilCaught = false,
): CaseResult {
  const shapes: ShapeResult[] = [];
  const schedules: ScheduleResult[] = [];
  const failed = new Set<string>();
  const layoutMismatches = checkLayouts(cuda, () => {
    for (const shape of kernelCase.shapes) {
      const prepared = shape.prepare(random, false);
      const runs = execute(cuda, prepared, kernel, REPEATS);
      const repeatable = runs.every((run) => sameRun(run, runs[0]!));
      const replayed = execute(cuda, prepared, kernel, 2, 'graph');
      const graphIdentical = replayed.every((run) => sameRun(run, runs[0]!));
      const accuracy = compareAccuracy(kernelCase, prepared, runs[0]!);
      const planted = shape.prepare(random, true);
      const nonFinite = compareNonFinite(planted, execute(cuda, planted, kernel, 1)[0]!);
      const details = [...accuracy.details];
      if (!graphIdentical) details.push('the graph replay wrote other bytes than the direct launch');
      const result: ShapeResult = {
        label: shape.label,
        error: accuracy.error,
        worstUlps: accuracy.worstUlps,
        integerMismatches: accuracy.integerMismatches,
        unwritten: accuracy.unwritten + nonFinite.unwritten,
        repeatable,
        graphIdentical,
        nonFiniteMismatches: nonFinite.mismatches,
        details,
      };
      if (accuracy.normFailed || result.integerMismatches > 0) failed.add('accuracy');
      if (accuracy.ulpsFailed) failed.add('ulps');
      if (result.unwritten > 0) failed.add('written');
      if (!result.repeatable) failed.add('repeat');
      if (!graphIdentical) failed.add('graph');
      if (result.nonFiniteMismatches > 0) failed.add('non-finite');
      shapes.push(result);
      if (untilCaught && failed.size > 0) return;
    }
    for (const invariance of kernelCase.invariance ?? []) {
      const result = runInvariance(cuda, invariance, random.integer(2 ** 32), kernel);
      if (!result.identical || result.unwritten > 0) failed.add('invariance');
      schedules.push(result);
      if (untilCaught && failed.size > 0) return;
    }
    for (const equivalence of kernelCase.equivalences ?? []) {
      const result = runEquivalence(cuda, equivalence, random, kernel);
      if (!result.identical || result.unwritten > 0) failed.add('equivalence');
      schedules.push(result);
      if (untilCaught && failed.size > 0) return;
    }
  });
  if (layoutMismatches.length > 0) failed.add('layout');
  return {
    name: kernelCase.name,
    bound: kernelCase.bound,
    ulps: kernelCase.ulps,
    shapes,
    schedules,
    layoutMismatches,
    failedGates: [...failed],
  };
}

function describeBound(bound: number): string {
  return bound === BF16_ONE_ROUNDING_BOUND
    ? `${bound}; 2^-8 for outputs under ${STATISTICAL_ELEMENTS} elements`
    : String(bound);
}

export function describeCase(result: CaseResult): string {
  const verdict = result.failedGates.length === 0 ? 'PASS' : `FAIL (${result.failedGates.join(', ')})`;
  const worst = Math.max(...result.shapes.map((shape) => shape.error));
  const worstUlps = Math.max(...result.shapes.map((shape) => shape.worstUlps));
  const lines = [
    `${verdict.padEnd(6)} ${result.name}: worst error ${worst.toExponential(2)} (bound ${describeBound(result.bound)}), ` +
      `worst ${worstUlps.toFixed(2)} ulps (bound ${result.ulps})`,
  ];
  for (const shape of result.shapes) {
    lines.push(
      `         ${shape.label}: error ${shape.error.toExponential(2)}, ${shape.worstUlps.toFixed(2)} ulps, ` +
        `id mismatches ${shape.integerMismatches}, unwritten ${shape.unwritten}, repeatable ${shape.repeatable}, ` +
        `graph identical ${shape.graphIdentical}, non-finite mismatches ${shape.nonFiniteMismatches}`,
    );
    for (const detail of shape.details) lines.push(`           ${detail}`);
  }
  for (const schedule of result.schedules) {
    lines.push(
      `         ${schedule.identical && schedule.unwritten === 0 ? 'identical' : 'DIFFER'}: ${schedule.label}`,
    );
    for (const detail of schedule.details) lines.push(`           ${detail}`);
  }
  for (const mismatch of result.layoutMismatches) lines.push(`         layout: ${mismatch}`);
  return lines.join('\n');
}
