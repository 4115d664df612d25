// Batch invariance of the MoE experts on the device: a row's expert outputs and combined output are bit-identical
// alone and inside calls of 2, 7, 64 and 257 rows, and the control that sums ranks in another order in batched calls
// is caught. (Accuracy, written outputs, repeatability and non-finite handling are in the kernel contract.) Skips,
// saying why, where there is no CUDA device.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CudaContext } from '../../src/backend/cuda/context.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import { moeBf16InvarianceCase } from './support/moeBf16Cases.ts';
import { moeBlockInvarianceWith, moeInvarianceCases } from './support/moeCases.ts';
import { freshSeed } from './support/random.ts';
import { checkInvariance } from './support/rowInvariance.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `no CUDA device: ${availability.reason}`;

let cuda: CudaContext;
before(() => {
  if (!skip) cuda = new CudaContext();
});
after(() => {
  if (!skip) cuda.close();
});

test('a row of the MoE block computes the same bits whatever rows share its call', { skip }, () => {
  const seed = freshSeed();
  console.log(`moe invariance on ${cuda.properties.name}, seed ${seed}`);
  for (const invariance of [...moeInvarianceCases, moeBf16InvarianceCase]) {
    const result = checkInvariance(cuda, invariance, seed);
    console.log(
      `${result.mismatches === 0 ? 'PASS' : 'FAIL'}   invariance ${result.label}: ${result.mismatches} rows differ${result.firstMismatch ? ` (${result.firstMismatch})` : ''}`,
    );
    assert.equal(result.mismatches, 0, `${result.label}: ${result.firstMismatch} (seed ${seed})`);
  }
});

test('a combine whose order changes in batched calls is caught by the invariance check', { skip }, () => {
  const seed = freshSeed();
  const combine = { family: 'moe_controls', name: 'control_moe_combine_batched_order' };
  const result = checkInvariance(cuda, moeBlockInvarianceWith({ combine }), seed);
  console.log(`CONTROL ${combine.name}: ${result.mismatches > 0 ? `CAUGHT (${result.firstMismatch})` : 'MISSED'}`);
  assert.ok(result.mismatches > 0, `the batched-order combine control was not caught (seed ${seed})`);
});
