// The decode GEMM's tile configurations side by side (kernels/cuda/gemm.cu: rows16 and rows16k128), at
// every projection of the frame step and every segmented launch the blocks make, at 1 and 8 rows. They differ only
// in how K is staged (64 elements in 4 stages, or 128 in 2), so each must give rows16's bits: the bench checks that on
// every shape (rows16k128 falls back to rows16 where K or a chunk is not whole 128-element tiles: the candidate head).
// Each figure is the median of 21 replays of a captured graph of back-to-back launches over rotated weights (more
// memory than four L2s), as bench/gpu-gemm.ts times them; "copy" is the copy bandwidth measured in the same run.
// Prints one table; writes gpu-gemm-decode.json to the output directory.
// Usage: tsx bench/gpu-gemm-decode.ts [output directory]
import { CudaContext } from '../src/backend/cuda/context.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import type { Allocation } from '../src/backend/cuda/memory.ts';
import { type GemmTiles, gemm, gemmWorkspaceBytes } from '../src/backend/cuda/ops/gemm.ts';
import { gemmSegments, gemmSegmentsWorkspaceBytes } from '../src/backend/cuda/ops/gemmSegments.ts';
import { DeviceBuffers, randomBf16Block, rotationSets } from './support/device-buffers.ts';
import { timeGraph } from './support/gpu-timing.ts';
import { markdownTable, writeReport } from './support/output.ts';
import { copyBandwidth } from './support/roofline.ts';

const availability = cudaAvailability();
if (!availability.available) {
  console.log(`gpu-gemm-decode needs a CUDA device: ${availability.reason}`);
  process.exit(0);
}
const cuda = new CudaContext();

const CONFIGURATIONS: readonly GemmTiles[] = ['rows16', 'rows16k128'];
const ROWS = [1, 8] as const;
const REPLAYS = 21;

/** One launch of the step: a plain projection (one segment) or projections of one x in one segmented launch. */
interface Launch {
  readonly name: string;
  readonly inFeatures: number;
  readonly outFeatures: readonly number[];
  readonly output?: 'f32';
  /** Launches of this shape in one batch-1 step (for the weighted total). */
  readonly perStep: number;
}

const LAUNCHES: readonly Launch[] = [
  { name: 'GDN inputs qkv, z, b, a', inFeatures: 2048, outFeatures: [8192, 4096, 32, 32], perStep: 30 },
  { name: 'attention q+gate, k, v', inFeatures: 2048, outFeatures: [8192, 512, 512], perStep: 10 },
  { name: 'tower attention q, k, v', inFeatures: 2048, outFeatures: [4096, 512, 512], perStep: 13 },
  { name: 'MoE router, shared gate|up, gate', inFeatures: 2048, outFeatures: [256, 512, 512, 1], perStep: 40 },
  { name: 'tower SwiGLU gate, up', inFeatures: 2048, outFeatures: [6144, 6144], perStep: 13 },
  { name: 'output projections, eh_proj', inFeatures: 4096, outFeatures: [2048], perStep: 40 + 13 + 13 },
  { name: 'shared expert down', inFeatures: 512, outFeatures: [2048], perStep: 40 },
  { name: 'tower SwiGLU down', inFeatures: 6144, outFeatures: [2048], perStep: 13 },
  { name: 'tower heads', inFeatures: 2048, outFeatures: [1024], output: 'f32', perStep: 9 },
  { name: 'candidate head', inFeatures: 2048, outFeatures: [4097], output: 'f32', perStep: 1 },
];

const buffers = new DeviceBuffers(cuda);
const randomBlock = randomBf16Block(0.03);
const aligned = (bytes: number) => Math.ceil(bytes / 256) * 256;

function timeLaunch(launch: Launch, rows: number) {
  const { inFeatures, outFeatures } = launch;
  const weightBytes = outFeatures.reduce((sum, n) => sum + n * inFeatures * 2, 0);
  const offsets = outFeatures.map((_, i) =>
    outFeatures.slice(0, i).reduce((s, n) => s + aligned(n * inFeatures * 2), 0),
  );
  const setBytes = offsets.at(-1)! + aligned(outFeatures.at(-1)! * inFeatures * 2);
  const sets: Allocation[] = Array.from({ length: rotationSets(cuda, setBytes) }, (_, i) =>
    buffers.tiled(setBytes, randomBlock, `decode w${i}`),
  );
  const x = buffers.tiled(rows * inFeatures * 2, randomBlock, 'decode x');
  const elementBytes = launch.output === 'f32' ? 4 : 2;
  const ys = outFeatures.map((n) => buffers.allocate(aligned(rows * n * elementBytes), 'decode y'));
  const workspaceBytes = Math.max(
    16,
    gemmSegmentsWorkspaceBytes(rows, inFeatures, outFeatures, 'rows16'),
    ...outFeatures.map((n) => gemmWorkspaceBytes(rows, n, inFeatures, 'rows16')),
  );
  const workspace = buffers.allocate(workspaceBytes, 'decode workspace');
  cuda.driver.fillWords(workspace.pointer, 0, workspaceBytes / 4, cuda.stream);
  const enqueue = (tiles: GemmTiles, base: bigint) => {
    if (outFeatures.length === 1) {
      gemm(
        cuda,
        {
          y: ys[0]!.pointer,
          x: x.pointer,
          w: base,
          workspace: workspace.pointer,
          rows,
          outFeatures: outFeatures[0]!,
          inFeatures,
          output: launch.output,
        },
        { tiles },
      );
      return;
    }
    const segments = outFeatures.map((n, i) => ({ y: ys[i]!.pointer, w: base + BigInt(offsets[i]!), outFeatures: n }));
    gemmSegments(cuda, { x: x.pointer, rows, inFeatures, segments, workspace: workspace.pointer }, { tiles });
  };
  const outputs = (tiles: GemmTiles) => {
    enqueue(tiles, sets[0]!.pointer);
    cuda.synchronize();
    return ys.map((y, i) => {
      const bytes = new Uint8Array(rows * outFeatures[i]! * elementBytes);
      cuda.driver.copyDeviceToHost(bytes, y.pointer, bytes.length, cuda.stream);
      cuda.synchronize();
      return Buffer.from(bytes);
    });
  };
  const reference = outputs('rows16');
  const launches = sets.length * 4;
  const figures = CONFIGURATIONS.map((tiles) => {
    const same = outputs(tiles).every((bytes, i) => Buffer.compare(bytes, reference[i]!) === 0);
    const enqueueAll = () => {
      for (let index = 0; index < launches; index++) enqueue(tiles, sets[index % sets.length]!.pointer);
    };
    const microseconds = (timeGraph(cuda, enqueueAll, { trials: REPLAYS, warmups: 2 }) / launches) * 1000;
    return { tiles, microseconds, sameBits: same };
  });
  for (const allocation of [x, ...ys, workspace, ...sets]) buffers.free(allocation);
  return { launch: launch.name, inFeatures, outFeatures, rows, weightBytes, perStep: launch.perStep, figures };
}

const copyGigabytesPerSecond = copyBandwidth(cuda).gigabytesPerSecond;
const results = LAUNCHES.flatMap((launch) => ROWS.map((rows) => timeLaunch(launch, rows)));
const share = (bytes: number, microseconds: number) =>
  `${((100 * bytes) / (microseconds * 1e3) / copyGigabytesPerSecond).toFixed(0)}%`;
const lines = [
  `decode GEMM configurations on ${cuda.properties.name}; copy ${copyGigabytesPerSecond.toFixed(0)} GB/s; µs a launch (% of copy), median of ${REPLAYS} replays`,
  ...markdownTable(
    ['launch', 'K→N', 'rows', 'weight MB', ...CONFIGURATIONS, 'same bits'],
    results.map((r) => [
      r.launch,
      `${r.inFeatures}→${r.outFeatures.join('+')}`,
      `${r.rows}`,
      (r.weightBytes / 1e6).toFixed(1),
      ...r.figures.map((f) => `${f.microseconds.toFixed(2)} (${share(r.weightBytes, f.microseconds)})`),
      r.figures.every((f) => f.sameBits)
        ? 'yes'
        : `NO: ${r.figures
            .filter((f) => !f.sameBits)
            .map((f) => f.tiles)
            .join(', ')}`,
    ]),
  ),
  '',
  "one batch-1 step's projections (launches per step × µs at 1 row), by configuration:",
  ...CONFIGURATIONS.map((tiles, index) => {
    const total = results
      .filter((r) => r.rows === 1)
      .reduce((sum, r) => sum + r.perStep * r.figures[index]!.microseconds, 0);
    return `  ${tiles}: ${(total / 1000).toFixed(3)} ms`;
  }),
];
console.log(lines.join('\n'));
writeReport('gpu-gemm-decode.json', { device: cuda.properties, copyGigabytesPerSecond, results });
cuda.close();
