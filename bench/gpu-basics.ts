// GPU basics: the numbers every later benchmark is measured against.
//   copy      device-to-device copy bandwidth, counting bytes read + written (the roofline denominator)
//   gemm      cuBLASLt bf16 TFLOP/s at 8192³ on random data
//   gemv      our bf16 GEMV's GB/s at the model's one-row shapes, weights rotated through more memory than L2 holds,
//             as a share of the copy bandwidth
//   launches  N small kernels launched one by one against the same N replayed as one CUDA graph
// Times are CUDA-event medians after warm-up. Prints one table; writes gpu-basics.json to the output directory.
// Usage: tsx bench/gpu-basics.ts [output directory]
import fs from 'node:fs';
import path from 'node:path';
import { CudaContext } from '../src/backend/cuda/context.ts';
import { CublasLt } from '../src/backend/cuda/cublaslt.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import { CapturedGraph } from '../src/backend/cuda/graph.ts';
import type { Allocation } from '../src/backend/cuda/memory.ts';
import { gemv } from '../src/backend/cuda/ops/gemv.ts';
import { swiglu } from '../src/backend/cuda/ops/swiglu.ts';
import { float32ToBf16Bits } from '../src/numeric/dtypes.ts';

const MiB = 1024 * 1024;
const availability = cudaAvailability();
if (!availability.available) {
  console.log(`gpu-basics needs a CUDA device: ${availability.reason}`);
  process.exit(0);
}
const cuda = new CudaContext();
const held: Allocation[] = [];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Milliseconds per call of `work`, the median over `trials` event-timed batches of `batch` calls. */
function time(work: () => void, batch: number, trials = 7, warmups = 2): number {
  const start = cuda.driver.createEvent();
  const end = cuda.driver.createEvent();
  for (let index = 0; index < warmups; index++) work();
  const samples: number[] = [];
  for (let trial = 0; trial < trials; trial++) {
    cuda.driver.recordEvent(start, cuda.stream);
    for (let index = 0; index < batch; index++) work();
    cuda.driver.recordEvent(end, cuda.stream);
    cuda.driver.synchronizeEvent(end);
    samples.push(cuda.driver.elapsedMilliseconds(start, end) / batch);
  }
  cuda.driver.destroyEvent(start);
  cuda.driver.destroyEvent(end);
  return median(samples);
}

const randomBlock = new Uint16Array(8 * MiB).map(() =>
  float32ToBf16Bits(Math.sqrt(-2 * Math.log(1 - Math.random())) * Math.cos(2 * Math.PI * Math.random())),
);

/** A device buffer of random normal bf16 values: one 16 MiB random block tiled over the buffer. */
function randomBuffer(bytes: number, label: string): Allocation {
  const block = randomBlock.subarray(0, Math.min(bytes / 2, randomBlock.length));
  const allocation = cuda.allocate(bytes, label);
  held.push(allocation);
  cuda.driver.copyHostToDevice(allocation.pointer, block, block.byteLength, cuda.stream);
  for (let offset = block.byteLength; offset < bytes; offset += block.byteLength) {
    const chunk = Math.min(block.byteLength, bytes - offset);
    cuda.driver.copyDeviceToDevice(allocation.pointer + BigInt(offset), allocation.pointer, chunk, cuda.stream);
  }
  cuda.synchronize();
  return allocation;
}

function measureCopy(): { bytes: number; milliseconds: number; gigabytesPerSecond: number } {
  const bytes = 1024 * MiB;
  const source = randomBuffer(bytes, 'copy source');
  const target = cuda.allocate(bytes, 'copy target');
  held.push(target);
  const milliseconds = time(
    () => cuda.driver.copyDeviceToDevice(target.pointer, source.pointer, bytes, cuda.stream),
    5,
  );
  return { bytes, milliseconds, gigabytesPerSecond: (2 * bytes) / milliseconds / 1e6 };
}

function measureGemm(blas: CublasLt): { size: number; milliseconds: number; teraflops: number } {
  const size = 8192;
  const bytes = size * size * 2;
  const x = randomBuffer(bytes, 'gemm x');
  const w = randomBuffer(bytes, 'gemm w');
  const y = cuda.allocate(bytes, 'gemm y');
  held.push(y);
  const milliseconds = time(() => blas.matmul(y.pointer, x.pointer, w.pointer, size, size, size), 3, 5, 3);
  return { size, milliseconds, teraflops: (2 * size ** 3) / milliseconds / 1e9 };
}

interface GemvVariant {
  readonly dependentLaunch: boolean;
  readonly blocksPerMultiprocessor?: number;
  readonly stages?: number;
}

function measureGemv(inFeatures: number, outFeatures: number, variant: GemvVariant, copyGigabytesPerSecond: number) {
  const weightBytes = inFeatures * outFeatures * 2;
  // Enough weight sets that the rotation cannot live in L2.
  const sets = Math.max(2, Math.ceil((4 * cuda.properties.l2CacheBytes) / weightBytes));
  const weights = Array.from({ length: sets }, (_, index) => randomBuffer(weightBytes, `gemv w${index}`));
  const x = randomBuffer(inFeatures * 2, 'gemv x');
  const y = cuda.allocate(outFeatures * 2, 'gemv y');
  held.push(y);
  const launches = sets * 8;
  const enqueue = () => {
    for (let index = 0; index < launches; index++) {
      const w = weights[index % sets]!.pointer;
      gemv(cuda, { y: y.pointer, w, x: x.pointer, rows: 1, outFeatures, inFeatures }, variant);
    }
  };
  const graph = CapturedGraph.capture(cuda.driver, cuda.stream, enqueue);
  const milliseconds = time(() => graph.launch(cuda.stream), 3) / launches;
  graph.destroy();
  const bytes = weightBytes + inFeatures * 2 + outFeatures * 2;
  const gigabytesPerSecond = bytes / milliseconds / 1e6;
  const shareOfCopy = gigabytesPerSecond / copyGigabytesPerSecond;
  for (const allocation of [...weights, x, y]) {
    allocation.free();
    held.splice(held.indexOf(allocation), 1);
  }
  const microseconds = milliseconds * 1000;
  return { inFeatures, outFeatures, ...variant, microseconds, gigabytesPerSecond, shareOfCopy };
}

function measureLaunches(count: number) {
  const cols = 512;
  const gate = randomBuffer(cols * 2, 'launch gate');
  const up = randomBuffer(cols * 2, 'launch up');
  const out = cuda.allocate(cols * 2, 'launch out');
  held.push(out);
  const enqueue = () => {
    for (let index = 0; index < count; index++) {
      swiglu(cuda, { out: out.pointer, gate: gate.pointer, up: up.pointer, rows: 1, cols });
    }
  };
  const oneByOne = time(enqueue, 1) / count;
  const graph = CapturedGraph.capture(cuda.driver, cuda.stream, enqueue);
  const replayed = time(() => graph.launch(cuda.stream), 1) / count;
  graph.destroy();
  return { count, oneByOneMicroseconds: oneByOne * 1000, graphMicroseconds: replayed * 1000 };
}

const outputDirectory = path.resolve(process.argv[2] ?? '.');
const blas = new CublasLt(cuda);
const copy = measureCopy();
const gemm = measureGemm(blas);
const gemvShapes = [
  [2048, 8192],
  [4096, 2048],
  [2048, 4097],
] as const;
// The launcher's defaults (dependent launch, tuned per row length), the same without dependent launch, then other
// tunings of the staged kernel (blocks per multiprocessor × tiles in flight per block).
const gemvVariants: GemvVariant[] = [
  { dependentLaunch: true },
  { dependentLaunch: false },
  { dependentLaunch: true, blocksPerMultiprocessor: 2, stages: 3 },
  { dependentLaunch: true, blocksPerMultiprocessor: 4, stages: 1 },
  { dependentLaunch: true, blocksPerMultiprocessor: 5, stages: 1 },
];
const gemvs = gemvVariants.flatMap((variant) =>
  gemvShapes.map(([inFeatures, outFeatures]) => measureGemv(inFeatures, outFeatures, variant, copy.gigabytesPerSecond)),
);
const launches = measureLaunches(200);
for (const allocation of held) allocation.free();
blas.destroy();

const p = cuda.properties;
const lines = [
  `GPU basics on ${p.name} (sm_${p.computeCapability.join('')}, ${p.multiprocessors} SMs, L2 ${p.l2CacheBytes / MiB} MiB)`,
  '| measurement | value |',
  '|---|---|',
  `| device-to-device copy, 1 GiB (read + written) | ${copy.gigabytesPerSecond.toFixed(0)} GB/s |`,
  `| cuBLASLt bf16 GEMM 8192³ | ${gemm.teraflops.toFixed(0)} TFLOP/s (${gemm.milliseconds.toFixed(3)} ms) |`,
  ...gemvs.map(
    (g) =>
      `| GEMV bf16 ${g.inFeatures}→${g.outFeatures}, 1 row, ${g.dependentLaunch ? 'dependent' : 'plain'} launches` +
      `${g.blocksPerMultiprocessor ? `, ${g.blocksPerMultiprocessor} blocks × ${g.stages} tiles per SM` : ''} | ` +
      `${g.gigabytesPerSecond.toFixed(0)} GB/s, ` +
      `${(100 * g.shareOfCopy).toFixed(1)}% of copy (${g.microseconds.toFixed(2)} µs) |`,
  ),
  `| ${launches.count} small kernels launched one by one | ${launches.oneByOneMicroseconds.toFixed(2)} µs per kernel |`,
  `| the same ${launches.count} as one graph replay | ${launches.graphMicroseconds.toFixed(2)} µs per kernel |`,
];
console.log(lines.join('\n'));
const best = Math.max(...gemvs.filter((g) => g.outFeatures === 8192).map((g) => g.shareOfCopy));
const gemvTarget = best >= 0.8 ? 'met' : 'NOT met';
console.log(`GEMV 2048→8192 at ≥ 80% of copy bandwidth: ${gemvTarget}`);
fs.mkdirSync(outputDirectory, { recursive: true });
const report = { device: p, copy, gemm, gemv: gemvs, launches, cublasLtVersion: blas.version };
fs.writeFileSync(path.join(outputDirectory, 'gpu-basics.json'), `${JSON.stringify(report, null, 2)}\n`);
cuda.close();
