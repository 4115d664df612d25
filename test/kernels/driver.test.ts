// The binding layer on a real device: named driver errors, the allocation limit with the real driver, CUDA graph
// capture / replay / in-place update, cuLaunchKernelEx attributes, and cuBLASLt inside a graph. Skips without CUDA.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CudaContext, driverAllocationBackend } from '../../src/backend/cuda/context.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import { CapturedGraph } from '../../src/backend/cuda/graph.ts';
import { KernelArguments } from '../../src/backend/cuda/kernelArguments.ts';
import { type Allocation, MemoryPool } from '../../src/backend/cuda/memory.ts';
import { SWIGLU_KERNEL, swiglu } from '../../src/backend/cuda/ops/swiglu.ts';
import { isDramaError } from '../../src/errors.ts';
import { cublasFor, releaseCublas } from './support/mathCases.ts';
import { Random, randomBf16 } from './support/random.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `no CUDA device: ${availability.reason}`;
const MiB = 1024 * 1024;

let cuda: CudaContext;
const held: Allocation[] = [];
before(() => {
  if (skip) return;
  cuda = new CudaContext();
  const p = cuda.properties;
  console.log(`${p.name}, sm_${p.computeCapability.join('')}, ${p.multiprocessors} SMs, driver ${p.driverVersion}`);
});
after(() => {
  if (skip) return;
  for (const allocation of held) allocation.free();
  releaseCublas(cuda);
  cuda.close();
});

function upload(values: Uint16Array, label: string): Allocation {
  const allocation = cuda.upload(values, label);
  held.push(allocation);
  return allocation;
}

function output(bytes: number, label: string): Allocation {
  const allocation = cuda.allocate(bytes, label);
  held.push(allocation);
  cuda.driver.fillWords(allocation.pointer, 0x7fa5a5a5, Math.ceil(bytes / 4), cuda.stream);
  return allocation;
}

function readBits(allocation: Allocation, count: number): Uint16Array {
  return cuda.download(allocation.pointer, new Uint16Array(count));
}

test('a failed driver call throws the driver error by name', { skip }, () => {
  assert.throws(
    () => cuda.driver.freeDevice(0xdead0000n),
    (error) => isDramaError(error) && /^CUDA_ERROR_/.test(error.code) && error.kind === 'device',
  );
});

test('the allocation limit holds with the real driver', { skip }, async () => {
  const pool = new MemoryPool(driverAllocationBackend(cuda.driver), {
    deviceBytes: 1024 * MiB,
    pinnedHostBytes: 64 * MiB,
  });
  const settled = await Promise.allSettled(
    Array.from({ length: 16 }, (_, index) => pool.allocateAsync('device', 100 * MiB, `block ${index}`)),
  );
  const granted = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  assert.equal(granted.length, 10);
  const usage = pool.usage('device');
  assert.deepEqual(usage, { usedBytes: 1000 * MiB, pendingBytes: 0, peakBytes: 1000 * MiB, limitBytes: 1024 * MiB });
  assert.throws(() => pool.allocate('device', 25 * MiB, 'over'), /ALLOCATION_LIMIT|over the limit/);
  assert.deepEqual(pool.usage('device'), usage);
  for (const allocation of granted) allocation.free();
  const pinned = pool.allocate('pinned-host', 16 * MiB, 'staging');
  assert.equal(pool.usage('pinned-host').usedBytes, 16 * MiB);
  pinned.free();
  // A request the driver cannot meet (beyond the device's memory) is refunded: usage and peak stay as they were.
  const huge = new MemoryPool(driverAllocationBackend(cuda.driver), { deviceBytes: 2 ** 50, pinnedHostBytes: 0 });
  assert.throws(
    () => huge.allocate('device', 2 ** 45, 'impossible'),
    (error) => isDramaError(error) && error.code === 'CUDA_ERROR_OUT_OF_MEMORY',
  );
  assert.deepEqual(huge.usage('device'), { usedBytes: 0, pendingBytes: 0, peakBytes: 0, limitBytes: 2 ** 50 });
});

test('a captured graph replays, and updates in place for new pointers', { skip }, () => {
  const random = new Random(11);
  const rows = 64;
  const cols = 512;
  const count = rows * cols;
  const gate = upload(randomBf16(random, count).bits, 'gate');
  const up = upload(randomBf16(random, count).bits, 'up');
  const direct = output(count * 2, 'direct');
  const first = output(count * 2, 'first');
  const second = output(count * 2, 'second');
  swiglu(cuda, { out: direct.pointer, gate: gate.pointer, up: up.pointer, rows, cols });
  const expected = readBits(direct, count);
  const enqueue = (out: bigint) => () => swiglu(cuda, { out, gate: gate.pointer, up: up.pointer, rows, cols });
  const graph = CapturedGraph.capture(cuda.driver, cuda.stream, enqueue(first.pointer));
  assert.notDeepEqual(readBits(first, count), expected, 'capture must not run the work');
  graph.launch(cuda.stream);
  assert.deepEqual(readBits(first, count), expected);
  assert.equal(graph.update(cuda.stream, enqueue(second.pointer)), true);
  graph.launch(cuda.stream);
  assert.deepEqual(readBits(second, count), expected);
  graph.destroy();
});

test('cuLaunchKernelEx runs with cluster and programmatic-serialization attributes', { skip }, () => {
  const random = new Random(12);
  const count = 4096;
  const gate = upload(randomBf16(random, count).bits, 'gate');
  const up = upload(randomBf16(random, count).bits, 'up');
  const plain = output(count * 2, 'plain');
  const extended = output(count * 2, 'extended');
  swiglu(cuda, { out: plain.pointer, gate: gate.pointer, up: up.pointer, rows: 1, cols: count });
  const kernel = cuda.kernels.kernel(SWIGLU_KERNEL.family, SWIGLU_KERNEL.name);
  const args = new KernelArguments()
    .pointer(extended.pointer)
    .pointer(gate.pointer)
    .pointer(up.pointer)
    .int32(1)
    .int32(count)
    .int64(count);
  const shape = { grid: [16, 1, 1], block: [256, 1, 1] } as const;
  const attributes = { clusterDimensions: [2, 1, 1] as const, programmaticStreamSerialization: true };
  cuda.driver.launchEx(kernel, shape, cuda.stream, args.parameters, attributes, 'swiglu_bf16');
  assert.deepEqual(readBits(extended, count), readBits(plain, count));
});

test('a cuBLASLt matmul captured in a graph replays the direct result', { skip }, () => {
  const random = new Random(13);
  const [rows, outFeatures, inFeatures] = [8, 1024, 2048];
  const x = upload(randomBf16(random, rows * inFeatures).bits, 'x');
  const w = upload(randomBf16(random, outFeatures * inFeatures, 0.02).bits, 'w');
  const direct = output(rows * outFeatures * 2, 'direct');
  const replayed = output(rows * outFeatures * 2, 'replayed');
  const blas = cublasFor(cuda);
  console.log(`cuBLASLt version ${blas.version}`);
  blas.matmul(direct.pointer, x.pointer, w.pointer, rows, outFeatures, inFeatures);
  const graph = CapturedGraph.capture(cuda.driver, cuda.stream, () =>
    blas.matmul(replayed.pointer, x.pointer, w.pointer, rows, outFeatures, inFeatures),
  );
  graph.launch(cuda.stream);
  assert.deepEqual(readBits(replayed, rows * outFeatures), readBits(direct, rows * outFeatures));
  graph.destroy();
});
