// The kernel contract over every kernel and its controls (test/kernels/support/contract.ts says what the gates
// are). Prints one line per kernel and control, then `SUMMARY N kernels: P pass, F fail; C controls: C caught`.
// Skips, saying why, where there is no CUDA device.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CudaContext } from '../../src/backend/cuda/context.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import {
  attentionBackboneCase,
  attentionOtherCase,
  attentionPrepareBackboneCase,
  attentionPrepareOtherCase,
} from './support/attentionCases.ts';
import { type CaseResult, describeCase, type KernelCase, runCase } from './support/contract.ts';
import { controls } from './support/controls.ts';
import { gemmBf16Case, gemmFp32Case } from './support/gemmCases.ts';
import {
  gemmCase,
  gemvCase,
  gemvOtherTuningsCase,
  releaseCublas,
  routerCase,
  swigluCase,
} from './support/mathCases.ts';
import { moeBlockBf16Case } from './support/moeBf16Cases.ts';
import {
  moeBlockFp8Case,
  moeCombineCase,
  moeDownFp8Case,
  moeGateUpFp8Case,
  moeGroupingCase,
} from './support/moeCases.ts';
import { quantizeE4m3Case } from './support/quantizeCases.ts';
import { freshSeed, Random } from './support/random.ts';
import {
  embeddingGatherCase,
  frameRowCase,
  gatedRmsNormCase,
  plainRmsNormCase,
  ropeInterleavedCase,
  ropeNeoxCase,
  zeroCentredRmsNormCase,
} from './support/rowCases.ts';
import { sampleCodeCase, sampleMainCase } from './support/samplerCases.ts';

const kernelCases: readonly KernelCase[] = [
  zeroCentredRmsNormCase,
  plainRmsNormCase,
  gatedRmsNormCase,
  embeddingGatherCase,
  frameRowCase,
  ropeNeoxCase,
  ropeInterleavedCase,
  swigluCase,
  routerCase,
  gemvCase,
  gemvOtherTuningsCase,
  gemmCase,
  sampleMainCase,
  sampleCodeCase,
  attentionPrepareBackboneCase,
  attentionPrepareOtherCase,
  attentionBackboneCase,
  attentionOtherCase,
  moeGroupingCase,
  moeGateUpFp8Case,
  moeDownFp8Case,
  moeCombineCase,
  moeBlockFp8Case,
  moeBlockBf16Case,
  gemmBf16Case,
  gemmFp32Case,
  quantizeE4m3Case,
];

const availability = cudaAvailability();
const skip = availability.available ? false : `no CUDA device: ${availability.reason}`;

let cuda: CudaContext;
before(() => {
  if (!skip) cuda = new CudaContext();
});
after(() => {
  if (!skip) {
    releaseCublas(cuda);
    cuda.close();
  }
});

test('every kernel meets its contract and every control is caught', { skip }, () => {
  const seed = freshSeed();
  const random = new Random(seed);
  console.log(`kernel contract on ${cuda.properties.name}, seed ${seed}`);
  const results: CaseResult[] = [];
  for (const kernelCase of kernelCases) {
    const result = runCase(cuda, kernelCase, random);
    results.push(result);
    console.log(describeCase(result));
  }
  let caught = 0;
  for (const control of controls) {
    const result = runCase(cuda, control.kernelCase, random, control.kernel);
    const isCaught = result.failedGates.length > 0;
    if (isCaught) caught++;
    const verdict = isCaught ? `CAUGHT by ${result.failedGates.join(', ')}` : 'MISSED';
    console.log(`CONTROL ${control.kernel.name} (${control.description}): ${verdict}`);
  }
  const passed = results.filter((result) => result.failedGates.length === 0).length;
  const failed = results.length - passed;
  console.log(
    `SUMMARY ${results.length} kernels: ${passed} pass, ${failed} fail; ${controls.length} controls: ${caught} caught`,
  );
  assert.equal(failed, 0, `kernels failing their contract (seed ${seed})`);
  assert.equal(caught, controls.length, 'a deliberately wrong control passed the gates');
});
