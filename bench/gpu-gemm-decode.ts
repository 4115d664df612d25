// The decode GEMM's tile configurations side by side (kernels/cuda/gemm.cu), at every projection of the frame step and
// every segmented launch the blocks make: by default rows16 and rows16k128 at 1 and 8 rows; DRAMA3_GEMM_ROWS and
// DRAMA3_GEMM_TILES (comma lists; 'auto' is the launcher's own choice, which on a Hopper GPU takes the wgmma tiles
// from 17 rows) pick others, e.g. 64 rows under auto, rows64, rows96 and wgmma128. Configurations differ only in tile
// shape, K staging, the tensor-core instruction and whether chunks meet in registers or partials, so each must give
// rows16's bits (every output is filled with NaN before each configuration writes it): the bench
// checks that on every shape (rows16k128 falls back to rows16 where K or a chunk is not whole 128-element tiles: the
// candidate head).
// Each figure is the median of 21 replays of a captured graph of back-to-back launches over rotated weights (more
// memory than four L2s), as bench/gpu-gemm.ts times them; "copy" is the copy bandwidth measured in the same run.
// Prints one table; writes gpu-gemm-decode.json to the output directory.
// Usage: tsx bench/gpu-gemm-decode.ts [output directory]
import { CudaContext } from '../src/backend/cuda/context.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import type { Allocation } from '../src/backend/cuda/memory.ts';
import { GEMM_CONFIGURATIONS, type GemmTiles, gemm, gemmWorkspaceBytes } from '../src/backend/cuda/ops/gemm.ts';
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

function listed(name: string, fallback: string): string[] {
  return (process.env[name] ?? fallback)
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}
/** A tile configuration, or 'auto': the launcher's own choice by rows and the call's output columns (gemmTilesFor). */
type Configuration = GemmTiles | 'auto';
const CONFIGURATIONS = listed('DRAMA3_GEMM_TILES', 'rows16,rows16k128') as Configuration[];
for (const tiles of CONFIGURATIONS) {
  if (tiles !== 'auto' && !(tiles in GEMM_CONFIGURATIONS)) {
    throw new Error(`DRAMA3_GEMM_TILES: ${tiles} is not auto or one of ${Object.keys(GEMM_CONFIGURATIONS).join(', ')}`);
  }
}
const ROWS = listed('DRAMA3_GEMM_ROWS', '1,8').map(Number);
if (ROWS.some((rows) => !Number.isInteger(rows) || rows < 1)) throw new Error('DRAMA3_GEMM_ROWS: positive integers');
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
    ...(Object.keys(GEMM_CONFIGURATIONS) as GemmTiles[]).flatMap((tiles) => [
      gemmSegmentsWorkspaceBytes(rows, inFeatures, outFeatures, tiles),
      ...outFeatures.map((n) => gemmWorkspaceBytes(rows, n, inFeatures, tiles)),
    ]),
  );
  const workspace = buffers.allocate(workspaceBytes, 'decode workspace');
  cuda.driver.fillWords(workspace.pointer, 0, workspaceBytes / 4, cuda.stream);
  const enqueue = (configuration: Configuration, base: bigint) => {
    const tiles = configuration === 'auto' ? undefined : configuration;
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
  const outputs = (configuration: Configuration) => {
    for (const y of ys) cuda.driver.fillWords(y.pointer, 0x7fc00000, y.bytes / 4, cuda.stream);
    enqueue(configuration, sets[0]!.pointer);
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
  const figures = CONFIGURATIONS.map((configuration) => {
    const same = outputs(configuration).every((bytes, i) => Buffer.compare(bytes, reference[i]!) === 0);
    const enqueueAll = () => {
      for (let index = 0; index < launches; index++) enqueue(configuration, sets[index % sets.length]!.pointer);
    };
    const microseconds = (timeGraph(cuda, enqueueAll, { trials: REPLAYS, warmups: 2 }) / launches) * 1000;
    return { configuration, microseconds, sameBits: same };
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
            .map((f) => f.configuration)
            .join(', ')}`,
    ]),
  ),
  '',
  "one step's projections (launches per step × µs a launch), by rows and configuration:",
  ...ROWS.flatMap((rows) =>
    CONFIGURATIONS.map((configuration, index) => {
      const total = results
        .filter((r) => r.rows === rows)
        .reduce((sum, r) => sum + r.perStep * r.figures[index]!.microseconds, 0);
      return `  ${rows} rows, ${configuration}: ${(total / 1000).toFixed(3)} ms`;
    }),
  ),
];
console.log(lines.join('\n'));
writeReport('gpu-gemm-decode.json', { device: cuda.properties, copyGigabytesPerSecond, results });
cuda.close();
