// GPU basics: the numbers every later benchmark is measured against.
//   copy      device-to-device copy bandwidth, counting bytes read + written (the roofline denominator)
//   gemm      cuBLASLt bf16 TFLOP/s at 8192³ on random data
//   gemv      our bf16 GEMV's GB/s at the model's one-row shapes, weights rotated through more memory than L2 holds,
//             as a share of the copy bandwidth
//   launches  N small kernels launched one by one against the same N replayed as one CUDA graph
// Times are CUDA-event medians after warm-up. Prints one table; writes gpu-basics.json to the output directory.
// Usage: tsx bench/gpu-basics.ts [output directory]
import { CudaContext } from '../src/backend/cuda/context.ts';
import { CublasLt } from '../src/backend/cuda/cublaslt.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import { gemv } from '../src/backend/cuda/ops/gemv.ts';
import { swiglu } from '../src/backend/cuda/ops/swiglu.ts';
import { DeviceBuffers, MiB, randomBf16Block, rotationSets } from './support/device-buffers.ts';
import { timeEvents, timeGraph } from './support/gpu-timing.ts';
import { markdownTable, writeReport } from './support/output.ts';
import { copyBandwidth, denseGemmRate } from './support/roofline.ts';

const availability = cudaAvailability();
if (!availability.available) {
  console.log(`gpu-basics needs a CUDA device: ${availability.reason}`);
  process.exit(0);
}
const cuda = new CudaContext();
const buffers = new DeviceBuffers(cuda);
const randomBlock = randomBf16Block();
const randomBuffer = (bytes: number, label: string) => buffers.tiled(bytes, randomBlock, label);
const time = (work: () => void, batch: number, trials = 7, warmups = 2) =>
  timeEvents(cuda, work, { batch, trials, warmups });

interface GemvVariant {
  readonly dependentLaunch: boolean;
  readonly blocksPerMultiprocessor?: number;
  readonly stages?: number;
}

function measureGemv(inFeatures: number, outFeatures: number, variant: GemvVariant, copyGigabytesPerSecond: number) {
  const weightBytes = inFeatures * outFeatures * 2;
  // Enough weight sets that the rotation cannot live in L2.
  const sets = rotationSets(cuda, weightBytes);
  const weights = Array.from({ length: sets }, (_, index) => randomBuffer(weightBytes, `gemv w${index}`));
  const x = randomBuffer(inFeatures * 2, 'gemv x');
  const y = buffers.allocate(outFeatures * 2, 'gemv y');
  const launches = sets * 8;
  const enqueue = () => {
    for (let index = 0; index < launches; index++) {
      const w = weights[index % sets]!.pointer;
      gemv(cuda, { y: y.pointer, w, x: x.pointer, rows: 1, outFeatures, inFeatures }, variant);
    }
  };
  const milliseconds = timeGraph(cuda, enqueue, { batch: 3, trials: 7, warmups: 2 }) / launches;
  const bytes = weightBytes + inFeatures * 2 + outFeatures * 2;
  const gigabytesPerSecond = bytes / milliseconds / 1e6;
  const shareOfCopy = gigabytesPerSecond / copyGigabytesPerSecond;
  for (const allocation of [...weights, x, y]) buffers.free(allocation);
  const microseconds = milliseconds * 1000;
  return { inFeatures, outFeatures, ...variant, microseconds, gigabytesPerSecond, shareOfCopy };
}

function measureLaunches(count: number) {
  const cols = 512;
  const gate = randomBuffer(cols * 2, 'launch gate');
  const up = randomBuffer(cols * 2, 'launch up');
  const out = buffers.allocate(cols * 2, 'launch out');
  const enqueue = () => {
    for (let index = 0; index < count; index++) {
      swiglu(cuda, { out: out.pointer, gate: gate.pointer, up: up.pointer, rows: 1, cols });
    }
  };
  const oneByOne = time(enqueue, 1) / count;
  const replayed = timeGraph(cuda, enqueue, { batch: 1, trials: 7, warmups: 2 }) / count;
  return { count, oneByOneMicroseconds: oneByOne * 1000, graphMicroseconds: replayed * 1000 };
}

const blas = new CublasLt(cuda);
const copy = copyBandwidth(cuda);
const gemm = denseGemmRate(cuda, blas);
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
buffers.release();
blas.destroy();

const p = cuda.properties;
const lines = [
  `GPU basics on ${p.name} (sm_${p.computeCapability.join('')}, ${p.multiprocessors} SMs, L2 ${p.l2CacheBytes / MiB} MiB)`,
  ...markdownTable(
    ['measurement', 'value'],
    [
      ['device-to-device copy, 1 GiB (read + written)', `${copy.gigabytesPerSecond.toFixed(0)} GB/s`],
      ['cuBLASLt bf16 GEMM 8192³', `${gemm.teraflops.toFixed(0)} TFLOP/s (${gemm.milliseconds.toFixed(3)} ms)`],
      ...gemvs.map((g) => [
        `GEMV bf16 ${g.inFeatures}→${g.outFeatures}, 1 row, ${g.dependentLaunch ? 'dependent' : 'plain'} launches` +
          `${g.blocksPerMultiprocessor ? `, ${g.blocksPerMultiprocessor} blocks × ${g.stages} tiles per SM` : ''}`,
        `${g.gigabytesPerSecond.toFixed(0)} GB/s, ` +
          `${(100 * g.shareOfCopy).toFixed(1)}% of copy (${g.microseconds.toFixed(2)} µs)`,
      ]),
      [
        `${launches.count} small kernels launched one by one`,
        `${launches.oneByOneMicroseconds.toFixed(2)} µs per kernel`,
      ],
      [`the same ${launches.count} as one graph replay`, `${launches.graphMicroseconds.toFixed(2)} µs per kernel`],
    ],
  ),
];
console.log(lines.join('\n'));
const best = Math.max(...gemvs.filter((g) => g.outFeatures === 8192).map((g) => g.shareOfCopy));
const gemvTarget = best >= 0.8 ? 'met' : 'NOT met';
console.log(`GEMV 2048→8192 at ≥ 80% of copy bandwidth: ${gemvTarget}`);
writeReport('gpu-basics.json', { device: p, copy, gemm, gemv: gemvs, launches, cublasLtVersion: blas.version });
cuda.close();
