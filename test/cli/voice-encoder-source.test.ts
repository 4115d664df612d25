// Where `serve` and `voices add` encode references: on the device the codec decodes on, at its precision. The cpu
// when asked for or when the model is asked onto the cpu; cuda asked for where there is none is refused by name.
// Devices and kernels are probed through fakes, so every branch runs on any machine.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { voiceEncoderSource } from '../../src/cli/voices.ts';
import type { BackendProbes } from '../../src/engine/backend-choice.ts';

const DIR = 'checkpoint-folder';
const WITH_DEVICE: BackendProbes = { device: () => ({ available: true }), kernels: () => ({ available: true }) };
const WITHOUT_DEVICE: BackendProbes = {
  device: () => ({ available: false, reason: 'no libcuda' }),
  kernels: () => ({ available: false, reason: 'no kernels' }),
};

test('the null runtime encodes its own way', () => {
  assert.deepEqual(voiceEncoderSource({ kind: 'null' }, WITH_DEVICE), { kind: 'null' });
});

test('references encode on CUDA where the codec does, at its precision (f16 by default)', () => {
  assert.deepEqual(voiceEncoderSource({ kind: 'checkpoint', dir: DIR }, WITH_DEVICE), {
    kind: 'checkpoint',
    dir: DIR,
    device: { backend: 'cuda', precision: 'f16' },
  });
  assert.deepEqual(voiceEncoderSource({ kind: 'checkpoint', dir: DIR, codecPrecision: 'f32' }, WITH_DEVICE), {
    kind: 'checkpoint',
    dir: DIR,
    device: { backend: 'cuda', precision: 'f32' },
  });
});

test('references encode on the cpu when the codec or the model is asked onto it, or there is no device', () => {
  const cpu = { kind: 'checkpoint', dir: DIR, device: { backend: 'cpu' } };
  assert.deepEqual(voiceEncoderSource({ kind: 'checkpoint', dir: DIR, codecBackend: 'cpu' }, WITH_DEVICE), cpu);
  assert.deepEqual(voiceEncoderSource({ kind: 'checkpoint', dir: DIR, backend: 'cpu' }, WITH_DEVICE), cpu);
  assert.deepEqual(voiceEncoderSource({ kind: 'checkpoint', dir: DIR }, WITHOUT_DEVICE), cpu);
});

test('CUDA asked for where there is none is refused by name', () => {
  assert.throws(() => voiceEncoderSource({ kind: 'checkpoint', dir: DIR, codecBackend: 'cuda' }, WITHOUT_DEVICE), {
    code: 'CUDA_CODEC_UNAVAILABLE',
  });
});
