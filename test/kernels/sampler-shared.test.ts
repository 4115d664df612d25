// The sampler's launchers pass the dynamic shared memory its full sort works in and the block's width; the kernel checks
// at compile time that the sort's storage fits SAMPLER_SORT_BYTES and is compiled for SAMPLER_THREADS threads (its
// launch bounds and its sort's shape), so each pair of numbers must be the same.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { SAMPLER_SORT_BYTES, SAMPLER_THREADS } from '../../src/backend/cuda/ops/sampler.ts';

const SOURCE = new URL('../../kernels/cuda/sampler.cu', import.meta.url);

/** The integer kernels/cuda/sampler.cu #defines as `name`. */
function kernelDefine(name: string): number {
  const match = new RegExp(`^#define ${name} (\\d+)\\s*$`, 'm').exec(readFileSync(SOURCE, 'utf8'));
  assert.ok(match, `kernels/cuda/sampler.cu no longer defines ${name}`);
  return Number(match[1]);
}

test("the sampler's launch passes the shared memory the kernel's sort is compiled for", () => {
  assert.equal(SAMPLER_SORT_BYTES, kernelDefine('SAMPLER_SORT_BYTES'));
});

test("the sampler's launch uses the block width the kernel is compiled for", () => {
  assert.equal(SAMPLER_THREADS, kernelDefine('SAMPLER_THREADS'));
});
