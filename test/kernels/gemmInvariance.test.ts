// Batch invariance and launch equivalence of the GEMM and FP8 quantisation families on a device: each invariance
// case's rows computed in calls of 1, 2, 7, 64 and 257 rows must equal, byte for byte, the same rows of the largest
// call; each equivalence case's schedules (every tile configuration, split K or not) must give the same bytes. The
// K-order control (kernels/controls/gemm_controls.cu), accurate but batch-dependent, must fail here. Skips, saying
// why, where there is no CUDA device.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CudaContext } from '../../src/backend/cuda/context.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import type { Allocation } from '../../src/backend/cuda/memory.ts';
import type { KernelName } from '../../src/backend/cuda/ops/launch.ts';
import type { EquivalenceCase, HostInput, InvarianceCase, OutputSpec } from './support/contract.ts';
import { gemmBf16Case, gemmFp32Case } from './support/gemmCases.ts';
import { quantizeE4m3Case } from './support/quantizeCases.ts';
import { freshSeed, Random } from './support/random.ts';

const ELEMENT_BYTES = { bf16: 2, f32: 4, i32: 4 } as const;
const DEFAULT_ROW_COUNTS = [1, 2, 7, 64, 257];
const CONTROL: KernelName = { family: 'gemm_controls', name: 'control_gemm_k_reversed_with_rows' };

const availability = cudaAvailability();
const skip = availability.available ? false : `no CUDA device: ${availability.reason}`;
let cuda: CudaContext;
before(() => {
  if (!skip) cuda = new CudaContext();
});
after(() => {
  if (!skip) cuda.close();
});

/** Uploads the inputs, runs `launch` once and returns each output's bytes. */
function runOnce(
  inputs: Readonly<Record<string, HostInput>>,
  outputs: readonly OutputSpec[],
  launch: (pointers: Readonly<Record<string, bigint>>) => void,
): Uint8Array[] {
  const held: Allocation[] = [];
  try {
    const pointers: Record<string, bigint> = {};
    for (const [name, input] of Object.entries(inputs)) {
      const allocation = cuda.upload('bits' in input ? input.bits : input, `invariance input ${name}`);
      held.push(allocation);
      pointers[name] = allocation.pointer;
    }
    const targets = outputs.map((spec) => {
      const allocation = cuda.allocate(spec.count * ELEMENT_BYTES[spec.kind], `invariance output ${spec.name}`);
      held.push(allocation);
      pointers[spec.name] = allocation.pointer;
      cuda.driver.fillWords(
        allocation.pointer,
        0x7fa5a5a5,
        Math.floor((spec.count * ELEMENT_BYTES[spec.kind]) / 4),
        cuda.stream,
      );
      return { spec, allocation };
    });
    launch(pointers);
    cuda.synchronize();
    return targets.map(({ spec, allocation }) =>
      cuda.download(allocation.pointer, new Uint8Array(spec.count * ELEMENT_BYTES[spec.kind])),
    );
  } finally {
    for (const allocation of held) allocation.free();
  }
}

/** Rows (of the smaller calls) whose bytes differ from the same rows of the largest call. */
function invarianceMismatches(invariance: InvarianceCase, seed: number, kernel: KernelName | undefined): string[] {
  const counts = [...(invariance.rowCounts ?? DEFAULT_ROW_COUNTS)].sort((a, b) => a - b);
  const largest = counts[counts.length - 1]!;
  const runs = new Map<number, { outputs: readonly OutputSpec[]; bytes: Uint8Array[] }>();
  for (const rows of counts) {
    const prepared = invariance.prepare(seed, rows);
    const bytes = runOnce(prepared.inputs, prepared.outputs, (p) => prepared.run(cuda, p, kernel));
    runs.set(rows, { outputs: prepared.outputs, bytes });
  }
  const whole = runs.get(largest)!;
  const mismatches: string[] = [];
  for (const rows of counts.slice(0, -1)) {
    const run = runs.get(rows)!;
    run.outputs.forEach((spec, index) => {
      const rowBytes = invariance.elementsPerRow[spec.name]! * ELEMENT_BYTES[spec.kind];
      const ours = run.bytes[index]!;
      const reference = whole.bytes[index]!.subarray(0, rows * rowBytes);
      if (Buffer.compare(ours, reference) !== 0) mismatches.push(`${spec.name} at ${rows} rows vs ${largest}`);
    });
  }
  return mismatches;
}

function equivalenceMismatches(equivalence: EquivalenceCase, seed: number): string[] {
  const prepared = equivalence.prepare(new Random(seed));
  const entries = Object.entries(prepared.runs);
  const results = entries.map(([, run]) => runOnce(prepared.inputs, prepared.outputs, (p) => run(cuda, p, undefined)));
  const mismatches: string[] = [];
  results.slice(1).forEach((bytes, index) => {
    bytes.forEach((output, o) => {
      if (Buffer.compare(output, results[0]![o]!) !== 0)
        mismatches.push(`${entries[index + 1]![0]} vs ${entries[0]![0]}`);
    });
  });
  return mismatches;
}

test('GEMM and e4m3 rows are bit-identical in every call size and schedule; the K-order control is caught', {
  skip,
}, () => {
  const seed = freshSeed();
  console.log(`gemm/quantize invariance on ${cuda.properties.name}, seed ${seed}`);
  const failures: string[] = [];
  for (const kernelCase of [gemmBf16Case, gemmFp32Case, quantizeE4m3Case]) {
    for (const invariance of kernelCase.invariance ?? []) {
      const mismatches = invarianceMismatches(invariance, seed, undefined);
      console.log(
        `${mismatches.length === 0 ? 'PASS' : 'FAIL'} ${kernelCase.name}, invariance ${invariance.label} ${mismatches.join('; ')}`,
      );
      failures.push(...mismatches.map((m) => `${kernelCase.name} ${invariance.label}: ${m}`));
    }
    for (const equivalence of kernelCase.equivalences ?? []) {
      const mismatches = equivalenceMismatches(equivalence, seed);
      console.log(
        `${mismatches.length === 0 ? 'PASS' : 'FAIL'} ${kernelCase.name}, ${equivalence.label} ${mismatches.join('; ')}`,
      );
      failures.push(...mismatches.map((m) => `${kernelCase.name} ${equivalence.label}: ${m}`));
    }
  }
  const control = invarianceMismatches(gemmBf16Case.invariance![0]!, seed, CONTROL);
  console.log(`CONTROL ${CONTROL.name}: ${control.length > 0 ? `CAUGHT (${control.join('; ')})` : 'MISSED'}`);
  assert.deepEqual(failures, [], `seed ${seed}`);
  assert.ok(control.length > 0, 'the K-order control passed the invariance check');
});
