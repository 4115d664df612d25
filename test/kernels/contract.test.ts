// The kernel contract over every kernel and its controls (test/kernels/support/contract.ts says what the gates
// are): one test per kernel and per control, so one failure hides no other, then
// `SUMMARY N kernels: P pass, F fail; C controls: C caught`. Inputs come from DRAMA3_CONTRACT_SEED (an integer in
// [0, 2³²)) or a fresh seed, printed either way; each case draws from its own stream of it, so one case repeats
// alone. DRAMA3_CONTRACT_ONLY (a substring of case names) runs only the kernels and controls whose case name has it;
// DRAMA3_CONTRACT_SKIP (one too) leaves out those whose name has it (e.g. `codec`: the frame step's kernels alone).
// DRAMA3_CONTRACT_PART=i/n runs every n-th case from the i-th (support/contract-part.ts): n processes at once, one
// seed, run the whole contract in about 1/n of the time.
// Skips, saying why, where there is no CUDA device.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { after, before, test } from 'node:test';
import { CudaContext } from '../../src/backend/cuda/context.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import { describeCase, runCase } from './support/contract.ts';
import { contractPart, inPart, partLabel } from './support/contract-part.ts';
import { controls } from './support/controls.ts';
import { kernelCases } from './support/kernelCases.ts';
import { releaseCublas } from './support/mathCases.ts';
import { freshSeed, Random } from './support/random.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `no CUDA device: ${availability.reason}`;

function contractSeed(): number {
  const text = process.env.DRAMA3_CONTRACT_SEED;
  if (text === undefined || text === '') return freshSeed();
  const seed = Number(text);
  if (!Number.isInteger(seed) || seed < 0 || seed >= 2 ** 32) {
    throw new Error(`DRAMA3_CONTRACT_SEED must be an integer in [0, 2^32), got ${text}`);
  }
  return seed;
}

/** A per-case stream of the seed (FNV-1a of the name mixed in), independent of the order cases run in. */
function streamFor(seed: number, name: string): Random {
  let hash = 0x811c9dc5;
  for (const character of name) hash = Math.imul(hash ^ character.charCodeAt(0), 0x01000193) >>> 0;
  return new Random((seed ^ hash) >>> 0);
}

function seconds(started: number): string {
  return ((performance.now() - started) / 1000).toFixed(1);
}

const seed = contractSeed();
const only = process.env.DRAMA3_CONTRACT_ONLY ?? '';
const leftOut = process.env.DRAMA3_CONTRACT_SKIP ?? '';
const chosen = (name: string) => name.includes(only) && (leftOut === '' || !name.includes(leftOut));
const part = contractPart(process.env.DRAMA3_CONTRACT_PART);
// Filtered first, then parted: the parts of a filtered run share its cases evenly.
const chosenCases = inPart(
  kernelCases.filter((kernelCase) => chosen(kernelCase.name)),
  part,
);
const chosenControls = inPart(
  controls.filter((control) => chosen(control.kernelCase.name)),
  part,
);
let passed = 0;
let caught = 0;

let cuda: CudaContext;
before(() => {
  console.log(`kernel contract seed ${seed} (DRAMA3_CONTRACT_SEED=${seed} repeats this run)`);
  if (!skip) {
    cuda = new CudaContext();
    console.log(`kernel contract on ${cuda.properties.name}`);
  }
});
after(() => {
  if (!skip) {
    releaseCublas(cuda);
    cuda.close();
  }
});

for (const kernelCase of chosenCases) {
  test(`kernel ${kernelCase.name} meets its contract`, { skip }, () => {
    const started = performance.now();
    const result = runCase(cuda, kernelCase, streamFor(seed, kernelCase.name));
    const description = describeCase(result);
    console.log(`${description}\n         (${seconds(started)} s)`);
    if (result.failedGates.length === 0) passed++;
    assert.deepEqual(result.failedGates, [], `${description}\n(seed ${seed})`);
  });
}

for (const control of chosenControls) {
  const name = `${control.kernel.name} (${control.description})`;
  test(`control ${name} is caught`, { skip }, () => {
    const started = performance.now();
    // A control is caught at its first failing shape: the rest of its case would only repeat the verdict.
    const result = runCase(cuda, control.kernelCase, streamFor(seed, name), control.kernel, true);
    const where = result.schedules.at(-1)?.label ?? result.shapes.at(-1)?.label;
    const verdict = result.failedGates.length > 0 ? `CAUGHT by ${result.failedGates.join(', ')} at ${where}` : 'MISSED';
    console.log(`CONTROL ${name}: ${verdict} (${seconds(started)} s)`);
    if (result.failedGates.length > 0) caught++;
    assert.notDeepEqual(result.failedGates, [], `a deliberately wrong control passed every gate (seed ${seed})`);
  });
}

test('summary', { skip }, () => {
  // A case that threw counts as failed, a control that threw as not caught.
  const failed = chosenCases.length - passed;
  const filtered = only === '' && leftOut === '' ? '' : `only "${only}", not "${leftOut}"`;
  const named = [partLabel(part), filtered].filter((words) => words !== '').join(', ');
  const subset = named === '' ? '' : ` (of ${kernelCases.length} kernels: ${named})`;
  console.log(
    `SUMMARY ${chosenCases.length} kernels: ${passed} pass, ${failed} fail; ${chosenControls.length} controls: ${caught} caught${subset}`,
  );
  assert.ok(
    chosenCases.length > 0,
    `no kernel case in ${partLabel(part) || 'the contract'} has "${only}" without "${leftOut}" in its name`,
  );
  assert.equal(passed, chosenCases.length, `kernels failing their contract (seed ${seed})`);
  assert.equal(caught, chosenControls.length, 'a deliberately wrong control passed the gates');
});
