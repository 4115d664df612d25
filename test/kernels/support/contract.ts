// The kernel contract (ARCHITECTURE.md, contract 6): every kernel, on fresh random inputs at each of its shapes, is
// held to four gates against the cpu backend's fp64 reference:
//   accuracy   ‖out − ref‖₂ / ‖ref‖₂ within the kernel's stated bound (integer outputs: exactly equal)
//   written    outputs are poisoned with a NaN payload no kernel produces before every run; none may survive
//   repeat     five runs give bit-identical outputs
//   non-finite with NaN/±Inf planted in the inputs, each output element is NaN, +Inf, −Inf or finite exactly where
//              the reference's is (integer outputs: exactly equal)
// Controls (deliberately wrong kernels with the same signatures) run through the same gates and must be caught.
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import type { Allocation } from '../../../src/backend/cuda/memory.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import { bf16BitsToFloat32 } from '../../../src/numeric/dtypes.ts';
import type { Bf16Tensor, Random } from './random.ts';

export type OutputKind = 'bf16' | 'f32' | 'i32';
export type HostInput = Bf16Tensor | Int32Array | Float32Array;

export interface OutputSpec {
  readonly name: string;
  readonly kind: OutputKind;
  readonly count: number;
}

/** One shape's inputs, its reference and how to launch the kernel on them. */
export interface Prepared {
  readonly inputs: Readonly<Record<string, HostInput>>;
  readonly outputs: readonly OutputSpec[];
  /** The fp64 reference outputs, by name (integer outputs as Int32Array). */
  reference(): Record<string, Float64Array | Int32Array>;
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
  readonly shapes: readonly ShapeCase[];
  readonly invariance?: readonly InvarianceCase[];
  readonly equivalences?: readonly EquivalenceCase[];
}

export interface ShapeResult {
  readonly label: string;
  readonly error: number;
  readonly integerMismatches: number;
  readonly unwritten: number;
  readonly repeatable: boolean;
  readonly nonFiniteMismatches: number;
}

export interface CaseResult {
  readonly name: string;
  readonly bound: number;
  readonly shapes: readonly ShapeResult[];
  readonly failedGates: readonly string[];
}

/** One rounding of an exact result to bf16 gives about 1.65e-3 on normal data; truncating gives about 3.3e-3. */
export const BF16_ONE_ROUNDING_BOUND = 2.2e-3;

const REPEATS = 5;
const POISON_BF16_PAIR = 0x7fa57fa5;
const POISON_WORD = 0x7fa5a5a5;
const ELEMENT_BYTES: Record<OutputKind, number> = { bf16: 2, f32: 4, i32: 4 };

function isBf16(input: HostInput): input is Bf16Tensor {
  return 'bits' in input;
}

function hostBytes(input: HostInput): ArrayBufferView {
  return isBf16(input) ? input.bits : input;
}

function poisonedCount(kind: OutputKind, bytes: Uint8Array, count: number): number {
  let poisoned = 0;
  if (kind === 'bf16') {
    const bits = new Uint16Array(bytes.buffer, bytes.byteOffset, count);
    for (const word of bits) if (word === (POISON_BF16_PAIR & 0xffff)) poisoned++;
  } else {
    const words = new Uint32Array(bytes.buffer, bytes.byteOffset, count);
    for (const word of words) if (word === POISON_WORD) poisoned++;
  }
  return poisoned;
}

function decode(kind: OutputKind, bytes: Uint8Array, count: number): Float64Array | Int32Array {
  if (kind === 'i32') return new Int32Array(bytes.buffer, bytes.byteOffset, count).slice();
  if (kind === 'f32') return Float64Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, count));
  const bits = new Uint16Array(bytes.buffer, bytes.byteOffset, count);
  const values = new Float64Array(count);
  for (let index = 0; index < count; index++) values[index] = bf16BitsToFloat32(bits[index]!);
  return values;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(a, b) === 0;
}

function classify(value: number): number {
  if (Number.isNaN(value)) return 0;
  if (value === Number.POSITIVE_INFINITY) return 1;
  if (value === Number.NEGATIVE_INFINITY) return 2;
  return 3;
}

/** Uploads, runs `repeats` times (poisoning before each), returns each run's raw output bytes. */
function execute(
  cuda: CudaContext,
  prepared: Prepared,
  kernel: KernelName | undefined,
  repeats: number,
): Uint8Array[][] {
  const allocations: Allocation[] = [];
  try {
    const pointers: Record<string, bigint> = {};
    for (const [name, input] of Object.entries(prepared.inputs)) {
      const allocation = cuda.upload(hostBytes(input), `contract input ${name}`);
      allocations.push(allocation);
      pointers[name] = allocation.pointer;
    }
    const outputs = prepared.outputs.map((spec) => {
      const bytes = Math.ceil((spec.count * ELEMENT_BYTES[spec.kind]) / 4) * 4;
      const allocation = cuda.allocate(bytes, `contract output ${spec.name}`);
      allocations.push(allocation);
      pointers[spec.name] = allocation.pointer;
      return { spec, allocation, bytes };
    });
    const runs: Uint8Array[][] = [];
    for (let run = 0; run < repeats; run++) {
      for (const { spec, allocation, bytes } of outputs) {
        const pattern = spec.kind === 'bf16' ? POISON_BF16_PAIR : POISON_WORD;
        cuda.driver.fillWords(allocation.pointer, pattern, bytes / 4, cuda.stream);
      }
      prepared.run(cuda, pointers, kernel);
      cuda.synchronize();
      runs.push(outputs.map(({ allocation, bytes }) => cuda.download(allocation.pointer, new Uint8Array(bytes))));
    }
    return runs;
  } finally {
    for (const allocation of allocations) allocation.free();
  }
}

/** Each output of one run beside its reference: decoded values and how many elements still hold the poison. */
function besideReference(prepared: Prepared, run: Uint8Array[]) {
  const reference = prepared.reference();
  return prepared.outputs.map((spec, index) => ({
    spec,
    poisoned: poisonedCount(spec.kind, run[index]!, spec.count),
    actual: decode(spec.kind, run[index]!, spec.count),
    expected: reference[spec.name]!,
  }));
}

function compareAccuracy(prepared: Prepared, run: Uint8Array[]) {
  let squaredError = 0;
  let squaredReference = 0;
  let integerMismatches = 0;
  let unwritten = 0;
  for (const { spec, poisoned, actual, expected } of besideReference(prepared, run)) {
    unwritten += poisoned;
    for (let element = 0; element < spec.count; element++) {
      if (spec.kind === 'i32') {
        if (actual[element] !== expected[element]) integerMismatches++;
        continue;
      }
      const difference = actual[element]! - expected[element]!;
      squaredError += Number.isNaN(difference) ? Number.POSITIVE_INFINITY : difference * difference;
      squaredReference += expected[element]! * expected[element]!;
    }
  }
  const error = squaredReference > 0 ? Math.sqrt(squaredError / squaredReference) : Math.sqrt(squaredError);
  return { error, integerMismatches, unwritten };
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

export function runCase(
  cuda: CudaContext,
  kernelCase: KernelCase,
  random: Random,
  kernel: KernelName | undefined = undefined,
): CaseResult {
  const shapes: ShapeResult[] = [];
  const failed = new Set<string>();
  for (const shape of kernelCase.shapes) {
    const prepared = shape.prepare(random, false);
    const runs = execute(cuda, prepared, kernel, REPEATS);
    const repeatable = runs.every((run) => run.every((bytes, index) => sameBytes(bytes, runs[0]![index]!)));
    const accuracy = compareAccuracy(prepared, runs[0]!);
    const planted = shape.prepare(random, true);
    const nonFinite = compareNonFinite(planted, execute(cuda, planted, kernel, 1)[0]!);
    const result: ShapeResult = {
      label: shape.label,
      error: accuracy.error,
      integerMismatches: accuracy.integerMismatches,
      unwritten: accuracy.unwritten + nonFinite.unwritten,
      repeatable,
      nonFiniteMismatches: nonFinite.mismatches,
    };
    if (!(result.error <= kernelCase.bound) || result.integerMismatches > 0) failed.add('accuracy');
    if (result.unwritten > 0) failed.add('written');
    if (!result.repeatable) failed.add('repeat');
    if (result.nonFiniteMismatches > 0) failed.add('non-finite');
    shapes.push(result);
  }
  return { name: kernelCase.name, bound: kernelCase.bound, shapes, failedGates: [...failed] };
}

export function describeCase(result: CaseResult): string {
  const verdict = result.failedGates.length === 0 ? 'PASS' : `FAIL (${result.failedGates.join(', ')})`;
  const worst = Math.max(...result.shapes.map((shape) => shape.error));
  const lines = [`${verdict.padEnd(6)} ${result.name}: worst error ${worst.toExponential(2)} (bound ${result.bound})`];
  for (const shape of result.shapes) {
    lines.push(
      `         ${shape.label}: error ${shape.error.toExponential(2)}, id mismatches ${shape.integerMismatches}, ` +
        `unwritten ${shape.unwritten}, repeatable ${shape.repeatable}, non-finite mismatches ${shape.nonFiniteMismatches}`,
    );
  }
  return lines.join('\n');
}
