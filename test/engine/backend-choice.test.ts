// The backend choice: auto takes cuda only when a device, its kernels and the geometry all allow it and otherwise
// says why it stayed on the cpu; an explicit cuda that cannot run is refused by name before any weight is read.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type BackendProbes, chooseBackend, parseBackendName } from '../../src/engine/backend-choice.ts';
import { cudaGeometryRefusals } from '../../src/engine/cuda-geometry.ts';
import { loadRuntime } from '../../src/engine/load-runtime.ts';
import { isDramaError } from '../../src/errors.ts';
import { loadConfig } from '../../src/model/config.ts';
import { tinyCheckpointDir } from '../model/tiny-checkpoint.ts';

const tiny = (await loadConfig(await tinyCheckpointDir())).config;
/** The tiny config with the real head dims, which the kernels serve. */
const servable = {
  ...tiny,
  text: {
    ...tiny.text,
    headDim: 256,
    linearKeyHeadDim: 128,
    linearValueHeadDim: 128,
    hiddenSize: 512,
    expertIntermediate: 512,
  },
  tower: { ...tiny.tower, headDim: 256 },
};

const everything: BackendProbes = { device: () => ({ available: true }), kernels: () => ({ available: true }) };
const noDevice: BackendProbes = {
  device: () => ({ available: false, reason: 'no libcuda.so.1' }),
  kernels: () => ({ available: true }),
};
const noKernels: BackendProbes = {
  device: () => ({ available: true }),
  kernels: () => ({ available: false, reason: 'no kernel modules in build/kernels' }),
};

test('auto picks cuda only when device, kernels and geometry allow it', () => {
  assert.deepEqual(cudaGeometryRefusals(servable), []);
  assert.equal(chooseBackend('auto', servable, everything).backend, 'cuda');
  const withoutDevice = chooseBackend('auto', servable, noDevice);
  assert.equal(withoutDevice.backend, 'cpu');
  assert.match(withoutDevice.reason, /no CUDA device \(no libcuda\.so\.1\)/);
  assert.match(chooseBackend('auto', servable, noKernels).reason, /no kernel modules/);
  const tinyChoice = chooseBackend('auto', tiny, everything);
  assert.equal(tinyChoice.backend, 'cpu');
  assert.match(tinyChoice.reason, /backbone attention head dim 16 is not 64, 128 or 256/);
  assert.match(tinyChoice.reason, /DeltaNet head dims 16\/16 are not 128/);
});

test('cpu is taken as asked; cuda that cannot run is refused with every reason', () => {
  assert.equal(chooseBackend('cpu', servable, everything).backend, 'cpu');
  assert.throws(
    () => chooseBackend('cuda', tiny, noDevice),
    (error: unknown) =>
      isDramaError(error) &&
      error.code === 'CUDA_BACKEND_UNAVAILABLE' &&
      /no CUDA device/.test(error.message) &&
      /head dim 16/.test(error.message),
  );
  assert.throws(
    () => parseBackendName('gpu'),
    (error: unknown) => isDramaError(error) && error.code === 'BACKEND_UNKNOWN',
  );
});

test('loading tiny with --backend cuda is refused by name (tiny has no CUDA-servable geometry)', async () => {
  await assert.rejects(
    loadRuntime({ kind: 'checkpoint', dir: await tinyCheckpointDir(), backend: 'cuda' }),
    (error: unknown) => isDramaError(error) && error.code === 'CUDA_BACKEND_UNAVAILABLE',
  );
});

test('auto on tiny loads on the cpu and says why in the notices', async () => {
  const runtime = await loadRuntime({ kind: 'checkpoint', dir: await tinyCheckpointDir(), backend: 'auto' });
  assert.match(runtime.notices?.[0] ?? '', /^backend: cpu \(auto: /);
  const streamed = runtime.notices?.find((notice) => notice.startsWith('weights streamed:'));
  assert.match(
    streamed ?? '',
    /^weights streamed: [\d.]+ MiB in [\d.]+ s \([\d.]+ GB\/s\) through two [\d.]+ MiB slots, read /,
  );
});
