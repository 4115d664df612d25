import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BackendProbes } from '../../src/engine/backend-choice.ts';
import { chooseCodecBackend } from '../../src/engine/codec-choice.ts';

const ready: BackendProbes = { device: () => ({ available: true }), kernels: () => ({ available: true }) };
const noDevice: BackendProbes = {
  device: () => ({ available: false, reason: 'no libcuda' }),
  kernels: () => ({ available: true }),
};
const noKernels: BackendProbes = {
  device: () => ({ available: true }),
  kernels: () => ({ available: false, reason: 'no kernel modules' }),
};

test('the codec decodes on cuda by default where a device and kernels are there', () => {
  const choice = chooseCodecBackend('auto', 'auto', 'f32', ready);
  assert.equal(choice.backend, 'cuda');
  assert.match(choice.reason, /codec: cuda, f32 \(auto\)/);
});

test('auto follows a model asked onto the cpu, and the cpu when asked for', () => {
  assert.equal(chooseCodecBackend('auto', 'cpu', 'f32', ready).backend, 'cpu');
  assert.equal(chooseCodecBackend('cpu', 'cuda', 'f32', ready).backend, 'cpu');
  assert.equal(chooseCodecBackend('cuda', 'cpu', 'f16-weights', ready).backend, 'cuda');
});

test('auto falls back to the cpu saying why; cuda asked for where it cannot run is refused by name', () => {
  const fallback = chooseCodecBackend('auto', 'auto', 'f32', noDevice);
  assert.equal(fallback.backend, 'cpu');
  assert.match(fallback.reason, /no CUDA device \(no libcuda\)/);
  assert.match(chooseCodecBackend('auto', 'auto', 'f32', noKernels).reason, /no kernel modules/);
  assert.throws(() => chooseCodecBackend('cuda', 'auto', 'f32', noKernels), { code: 'CUDA_CODEC_UNAVAILABLE' });
});
