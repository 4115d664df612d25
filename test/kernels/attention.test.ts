// The attention family's schedule gates (test/kernels/support/attentionSchedules.ts): batch invariance over decode
// lanes and prefill-like runs, and bit equivalence of prefill chunkings and of a decode row with its prefill, for the
// real kernels, and four planted controls (kernels/controls/attention_controls.cu) that those gates, and only they,
// catch: a tile walk cut at the call; a row group of the grouped kernel that walks only its first row's splits
// (seen only where a group straddles a split point: the runs' invariance, the prefills from 2046 and 8190, and the
// chunks of 66); a grouped kernel whose scores add their lane partials in another tree order (accurate, so the
// contract's accuracy and ulp gates pass it; every call of more than 64 rows differs from the same rows in smaller
// calls, which run the per-row kernel); and a few-rows walk (calls of at most 4 rows, four warps a head) whose warps
// sum a tile's probabilities a half at a time (accurate too; calls of 1 and 2 rows then differ from larger ones).
// The real kernels also run calls of the few-rows kernel's shared form (slabs past 16384 keys), whose grid holds the
// per-row walk's blocks too: a lane is walked by exactly one of them, in the bits of the per-row kernel. Prints one
// line per case. Skips, saying why, where there is no CUDA device.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CudaContext } from '../../src/backend/cuda/context.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import type { Allocation } from '../../src/backend/cuda/memory.ts';
import type { KernelName } from '../../src/backend/cuda/ops/launch.ts';
import {
  attentionEquivalences,
  attentionInvariance,
  attentionSharedCallInvariance,
} from './support/attentionSchedules.ts';
import type { EquivalenceCase, HostInput, InvarianceCase, OutputSpec } from './support/contract.ts';
import { elementBytes } from './support/execution.ts';
import { freshSeed, Random } from './support/random.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `no CUDA device: ${availability.reason}`;
const POISON = 0x7fa57fa5;
const TILE_CONTROL: KernelName = { family: 'attention_controls', name: 'control_attention_tiles_from_call_d256' };
const GROUP_CONTROL: KernelName = {
  family: 'attention_controls',
  name: 'control_attention_group_first_row_splits_d256',
};
const SCORES_CONTROL: KernelName = {
  family: 'attention_controls',
  name: 'control_attention_grouped_scores_levels_reversed_d256',
};
const HALVES_CONTROL: KernelName = {
  family: 'attention_controls',
  name: 'control_attention_few_rows_sum_by_halves_d256',
};

let cuda: CudaContext;
before(() => {
  if (!skip) cuda = new CudaContext();
});
after(() => {
  if (!skip) cuda.close();
});

type Run = (cuda: CudaContext, pointers: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) => void;

/** Uploads the inputs, poisons the outputs, runs once and returns each output's bytes. */
function execute(
  inputs: Readonly<Record<string, HostInput>>,
  outputs: readonly OutputSpec[],
  run: Run,
  kernel: KernelName | undefined,
): Uint8Array[] {
  const allocations: Allocation[] = [];
  try {
    const pointers: Record<string, bigint> = {};
    for (const [name, input] of Object.entries(inputs)) {
      const bytes = 'bits' in input ? input.bits : input;
      const allocation = bytes.byteLength > 0 ? cuda.upload(bytes, name) : cuda.allocate(4, name);
      allocations.push(allocation);
      pointers[name] = allocation.pointer;
    }
    const buffers = outputs.map((spec) => {
      const bytes = Math.ceil((spec.count * elementBytes(spec.kind)) / 4) * 4;
      const allocation = cuda.allocate(bytes, spec.name);
      allocations.push(allocation);
      pointers[spec.name] = allocation.pointer;
      cuda.driver.fillWords(allocation.pointer, POISON, bytes / 4, cuda.stream);
      return { allocation, bytes };
    });
    run(cuda, pointers, kernel);
    cuda.synchronize();
    return buffers.map(({ allocation, bytes }) => cuda.download(allocation.pointer, new Uint8Array(bytes)));
  } finally {
    for (const allocation of allocations) allocation.free();
  }
}

/** Row counts whose leading rows differ from the largest call's (empty when invariant). */
function invarianceFailures(c: InvarianceCase, seed: number, kernel: KernelName | undefined): string[] {
  const counts = [...(c.rowCounts ?? [1, 2, 7, 64, 257])].sort((a, b) => a - b);
  const results = counts.map((rows) => {
    const prepared = c.prepare(seed, rows);
    return { rows, outputs: prepared.outputs, bytes: execute(prepared.inputs, prepared.outputs, prepared.run, kernel) };
  });
  const largest = results[results.length - 1]!;
  const failures: string[] = [];
  for (const result of results.slice(0, -1)) {
    result.outputs.forEach((spec, index) => {
      const length = result.rows * c.elementsPerRow[spec.name]! * elementBytes(spec.kind);
      const mine = result.bytes[index]!.subarray(0, length);
      if (Buffer.compare(mine, largest.bytes[index]!.subarray(0, length)) !== 0) failures.push(`${result.rows} rows`);
    });
  }
  return failures;
}

/** Runs whose outputs differ from the first run's (empty when equivalent). */
function equivalenceFailures(c: EquivalenceCase, random: Random, kernel: KernelName | undefined): string[] {
  const prepared = c.prepare(random);
  const runs = Object.entries(prepared.runs).map(([name, run]) => ({
    name,
    bytes: execute(prepared.inputs, prepared.outputs, run, kernel),
  }));
  const first = runs[0]!;
  return runs
    .slice(1)
    .filter((run) => run.bytes.some((bytes, index) => Buffer.compare(bytes, first.bytes[index]!) !== 0))
    .map((run) => `${run.name} ≠ ${first.name}`);
}

function allFailures(seed: number, kernel: KernelName | undefined): string[] {
  const random = new Random(seed);
  const lines: string[] = [];
  for (const c of kernel === undefined
    ? [...attentionInvariance, ...attentionSharedCallInvariance]
    : attentionInvariance) {
    const failures = invarianceFailures(c, seed, kernel);
    console.log(`${failures.length === 0 ? 'PASS' : 'FAIL'}   invariance ${c.label} ${failures.join(', ')}`);
    lines.push(...failures.map((failure) => `${c.label}: ${failure}`));
  }
  for (const c of attentionEquivalences) {
    const failures = equivalenceFailures(c, random, kernel);
    console.log(`${failures.length === 0 ? 'PASS' : 'FAIL'}   equivalence ${c.label} ${failures.join(', ')}`);
    lines.push(...failures.map((failure) => `${c.label}: ${failure}`));
  }
  return lines;
}

test('attention rows are bit-identical whatever the batch, the chunking and the neighbours', { skip }, () => {
  const seed = freshSeed();
  console.log(`attention schedules on ${cuda.properties.name}, seed ${seed}`);
  assert.deepEqual(allFailures(seed, undefined), [], `seed ${seed}`);
});

test('the schedule gates catch a tile walk cut at the call instead of at absolute positions', { skip }, () => {
  const seed = freshSeed();
  const failures = allFailures(seed, TILE_CONTROL);
  console.log(`CONTROL ${TILE_CONTROL.name}: ${failures.length > 0 ? 'CAUGHT' : 'MISSED'} (seed ${seed})`);
  assert.ok(failures.length > 0, 'a tile walk that depends on the call passed the schedule gates');
});

test('the schedule gates catch a row group that walks only the splits its first row reaches', { skip }, () => {
  const seed = freshSeed();
  const failures = allFailures(seed, GROUP_CONTROL);
  console.log(`CONTROL ${GROUP_CONTROL.name}: ${failures.length > 0 ? 'CAUGHT' : 'MISSED'} (seed ${seed})`);
  assert.ok(failures.length > 0, "a row group cut at its first row's splits passed the schedule gates");
});

test("the schedule gates catch a grouped kernel whose scores add in another order than the per-row kernel's", {
  skip,
}, () => {
  const seed = freshSeed();
  const failures = allFailures(seed, SCORES_CONTROL);
  console.log(`CONTROL ${SCORES_CONTROL.name}: ${failures.length > 0 ? 'CAUGHT' : 'MISSED'} (seed ${seed})`);
  assert.ok(failures.length > 0, 'scores summed in another tree order by the grouped kernel passed the schedule gates');
});

test("the schedule gates catch a few-rows walk whose warps sum a tile's probabilities by halves", { skip }, () => {
  const seed = freshSeed();
  const failures = allFailures(seed, HALVES_CONTROL);
  console.log(`CONTROL ${HALVES_CONTROL.name}: ${failures.length > 0 ? 'CAUGHT' : 'MISSED'} (seed ${seed})`);
  assert.ok(failures.length > 0, 'a few-rows sum by halves passed the schedule gates');
});
