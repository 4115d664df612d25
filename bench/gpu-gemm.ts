// The batch-invariant bf16 GEMM (kernels/cuda/gemm.cu) at every projection of the frame step, at 1, 8, 64 and 4096
// rows, beside cuBLASLt (its heuristic's algorithm, not batch-invariant) at the same shapes and the per-op anchors
// measured on the H200 (ECOSYSTEM.md). Each figure is the median of 21 replays of a captured graph of back-to-back
// launches, the weights rotated through more memory than four L2s, so a launch pays what a decode step pays.
// GB/s counts weight bytes; "copy" is the device-to-device copy bandwidth measured in the same run. Then the
// projections the blocks fuse (DeltaNet's inputs, attention's q, k, v, SwiGLU's gate and up, the MoE's router and
// shared expert) at 1 and 64 rows: one GEMM each against one segmented launch, each in one graph.
// Prints one table; writes gpu-gemm.json to the output directory.
// Usage: tsx bench/gpu-gemm.ts [output directory]
import { CudaContext } from '../src/backend/cuda/context.ts';
import { CublasLt } from '../src/backend/cuda/cublaslt.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import type { Allocation } from '../src/backend/cuda/memory.ts';
import { gemm, gemmChunks, gemmTilesFor, gemmWorkspaceBytes } from '../src/backend/cuda/ops/gemm.ts';
import { gemmSegments, gemmSegmentsWorkspaceBytes } from '../src/backend/cuda/ops/gemmSegments.ts';
import { DeviceBuffers, MiB, randomBf16Block, rotationSets } from './support/device-buffers.ts';
import { timeGraph } from './support/gpu-timing.ts';
import { markdownTable, writeReport } from './support/output.ts';
import { copyBandwidth } from './support/roofline.ts';

const availability = cudaAvailability();
if (!availability.available) {
  console.log(`gpu-gemm needs a CUDA device: ${availability.reason}`);
  process.exit(0);
}
const cuda = new CudaContext();

interface Shape {
  readonly name: string;
  readonly inFeatures: number;
  readonly outFeatures: number;
  readonly output: 'bf16' | 'f32';
  /** What the best libraries reach there (ECOSYSTEM.md, docs/gpu.md), for the reader to compare. */
  readonly anchor: string;
}

const SHAPES: readonly Shape[] = [
  {
    name: 'GDN input q|k|v|z|b|a',
    inFeatures: 2048,
    outFeatures: 12352,
    output: 'bf16',
    anchor: 'cuBLAS: 1 row 16.4 µs, 3.08 TB/s (73%); 4096 rows 679 TFLOP/s',
  },
  {
    name: 'attention q+gate',
    inFeatures: 2048,
    outFeatures: 8192,
    output: 'bf16',
    anchor: 'our GEMV: 1 row 9.47 µs (83% of copy)',
  },
  { name: 'attention k or v', inFeatures: 2048, outFeatures: 512, output: 'bf16', anchor: '' },
  {
    name: 'output projection, eh_proj',
    inFeatures: 4096,
    outFeatures: 2048,
    output: 'bf16',
    anchor: 'cuBLAS: 1 row 10.2 µs, 1.65 TB/s (39%); our GEMV 6.19 µs (64%)',
  },
  { name: 'shared expert gate|up, tower heads', inFeatures: 2048, outFeatures: 1024, output: 'bf16', anchor: '' },
  { name: 'shared expert down', inFeatures: 512, outFeatures: 2048, output: 'bf16', anchor: '' },
  { name: 'router', inFeatures: 2048, outFeatures: 256, output: 'bf16', anchor: '' },
  {
    name: 'candidate head (fp32 out)',
    inFeatures: 2048,
    outFeatures: 4097,
    output: 'f32',
    anchor: 'our GEMV (bf16 out): 1 row 5.73 µs (69%)',
  },
  { name: 'tower SwiGLU gate|up', inFeatures: 2048, outFeatures: 12288, output: 'bf16', anchor: '' },
  { name: 'tower SwiGLU down', inFeatures: 6144, outFeatures: 2048, output: 'bf16', anchor: '' },
];
const ROWS = [1, 8, 64, 4096] as const;
const REPLAYS = 21;

const buffers = new DeviceBuffers(cuda);
const randomBlock = randomBf16Block(0.03);
const randomBuffer = (bytes: number, label: string) => buffers.tiled(bytes, randomBlock, label);

/** Milliseconds per launch: one graph of `launches` back-to-back launches, each on the next weight set. */
function perLaunch(sets: readonly Allocation[], launches: number, enqueue: (w: bigint) => void): number {
  const enqueueAll = () => {
    for (let index = 0; index < launches; index++) enqueue(sets[index % sets.length]!.pointer);
  };
  return timeGraph(cuda, enqueueAll, { trials: REPLAYS, warmups: 2 }) / launches;
}

/** Projections that read the same x, as the blocks run them: one segmented launch against one GEMM each. */
interface FusedSet {
  readonly name: string;
  readonly inFeatures: number;
  readonly outFeatures: readonly number[];
}

const FUSED_SETS: readonly FusedSet[] = [
  { name: 'GDN inputs qkv, z, b, a', inFeatures: 2048, outFeatures: [8192, 4096, 32, 32] },
  { name: 'attention q+gate, k, v', inFeatures: 2048, outFeatures: [8192, 512, 512] },
  { name: 'tower SwiGLU gate, up', inFeatures: 2048, outFeatures: [6144, 6144] },
  { name: 'MoE router, shared gate, up, sigmoid gate', inFeatures: 2048, outFeatures: [256, 512, 512, 1] },
];
const FUSED_ROWS = [1, 64] as const;

/** Per set of projections: the separate GEMMs and the segmented launch, each a graph over rotated weight sets. */
function timeFusedSet(set: FusedSet, rows: number) {
  const { inFeatures, outFeatures } = set;
  const weightBytes = outFeatures.reduce((sum, n) => sum + n * inFeatures * 2, 0);
  // Each rotation holds every projection's weights, 256-byte aligned one after another.
  const offsets = outFeatures.map((_, index) =>
    outFeatures.slice(0, index).reduce((sum, n) => sum + Math.ceil((n * inFeatures * 2) / 256) * 256, 0),
  );
  const setBytes = offsets.at(-1)! + Math.ceil((outFeatures.at(-1)! * inFeatures * 2) / 256) * 256;
  const sets = Array.from({ length: rotationSets(cuda, setBytes) }, (_, i) => randomBuffer(setBytes, `fused w${i}`));
  const x = randomBuffer(rows * inFeatures * 2, 'fused x');
  const ys = outFeatures.map((n) => buffers.allocate(rows * n * 2, 'fused y'));
  const separateBytes = Math.max(...outFeatures.map((n) => gemmWorkspaceBytes(rows, n, inFeatures)));
  const workspaceBytes = Math.max(separateBytes, gemmSegmentsWorkspaceBytes(rows, inFeatures, outFeatures), 16);
  const workspace = buffers.allocate(workspaceBytes, 'fused workspace');
  cuda.driver.fillWords(workspace.pointer, 0, workspaceBytes / 4, cuda.stream);
  const launches = sets.length * 4;
  const separate = perLaunch(sets, launches, (base) => {
    outFeatures.forEach((n, index) => {
      const w = base + BigInt(offsets[index]!);
      const a = { y: ys[index]!.pointer, x: x.pointer, w, workspace: workspace.pointer, outFeatures: n };
      gemm(cuda, { ...a, rows, inFeatures });
    });
  });
  const segmented = perLaunch(sets, launches, (base) => {
    const segments = outFeatures.map((n, index) => ({
      y: ys[index]!.pointer,
      w: base + BigInt(offsets[index]!),
      outFeatures: n,
    }));
    gemmSegments(cuda, { x: x.pointer, rows, inFeatures, segments, workspace: workspace.pointer });
  });
  for (const allocation of [x, ...ys, workspace, ...sets]) buffers.free(allocation);
  return {
    set: set.name,
    inFeatures,
    outFeatures,
    rows,
    weightBytes,
    separateMicroseconds: separate * 1000,
    separateGigabytesPerSecond: weightBytes / separate / 1e6,
    segmentedMicroseconds: segmented * 1000,
    segmentedGigabytesPerSecond: weightBytes / segmented / 1e6,
    speedup: separate / segmented,
  };
}

const blas = new CublasLt(cuda);
const copyGigabytesPerSecond = copyBandwidth(cuda).gigabytesPerSecond;
const results = [];
for (const shape of SHAPES) {
  const { inFeatures, outFeatures } = shape;
  const weightBytes = inFeatures * outFeatures * 2;
  const sets = Array.from({ length: rotationSets(cuda, weightBytes) }, (_, i) =>
    randomBuffer(weightBytes, `gemm w${i}`),
  );
  for (const rows of ROWS) {
    const x = randomBuffer(rows * inFeatures * 2, 'gemm x');
    const y = buffers.allocate(rows * outFeatures * 4, 'gemm y');
    const workspaceBytes = gemmWorkspaceBytes(rows, outFeatures, inFeatures);
    const workspace = workspaceBytes > 0 ? buffers.allocate(workspaceBytes, 'gemm workspace') : undefined;
    if (workspace) cuda.driver.fillWords(workspace.pointer, 0, workspaceBytes / 4, cuda.stream);
    const launches = rows >= 4096 ? Math.max(4, sets.length) : sets.length * 4;
    const ours = perLaunch(sets, launches, (w) =>
      gemm(cuda, {
        y: y.pointer,
        x: x.pointer,
        w,
        workspace: workspace?.pointer,
        rows,
        outFeatures,
        inFeatures,
        output: shape.output,
      }),
    );
    // The split's other combine: the last block of each tile adds the partials (one launch instead of two).
    const lastBlock = workspace
      ? perLaunch(sets, launches, (w) =>
          gemm(
            cuda,
            {
              y: y.pointer,
              x: x.pointer,
              w,
              workspace: workspace.pointer,
              rows,
              outFeatures,
              inFeatures,
              output: shape.output,
            },
            { combine: 'last-block' },
          ),
        )
      : undefined;
    blas.matmul(y.pointer, x.pointer, sets[0]!.pointer, rows, outFeatures, inFeatures);
    cuda.synchronize();
    const cublas = perLaunch(sets, launches, (w) =>
      blas.matmul(y.pointer, x.pointer, w, rows, outFeatures, inFeatures),
    );
    const flops = 2 * rows * inFeatures * outFeatures;
    const gigabytesPerSecond = weightBytes / ours / 1e6;
    results.push({
      shape: shape.name,
      inFeatures,
      outFeatures,
      output: shape.output,
      rows,
      tiles: gemmTilesFor(rows, outFeatures),
      chunks: gemmChunks(outFeatures, inFeatures),
      microseconds: ours * 1000,
      lastBlockMicroseconds: lastBlock === undefined ? undefined : lastBlock * 1000,
      lastBlockShareOfCopy:
        lastBlock === undefined ? undefined : weightBytes / lastBlock / 1e6 / copyGigabytesPerSecond,
      weightGigabytesPerSecond: gigabytesPerSecond,
      shareOfCopy: gigabytesPerSecond / copyGigabytesPerSecond,
      teraflops: flops / ours / 1e9,
      cublasMicroseconds: cublas * 1000,
      cublasShareOfCopy: weightBytes / cublas / 1e6 / copyGigabytesPerSecond,
      cublasTeraflops: flops / cublas / 1e9,
      anchor: shape.anchor,
    });
    for (const allocation of [x, y, workspace]) if (allocation) buffers.free(allocation);
  }
  for (const allocation of sets) buffers.free(allocation);
}
blas.destroy();
const fused = FUSED_SETS.flatMap((set) => FUSED_ROWS.map((rows) => timeFusedSet(set, rows)));

const p = cuda.properties;
const percent = (share: number) => `${(100 * share).toFixed(1)}%`;
const lines = [
  `bf16 GEMM on ${p.name} (${p.multiprocessors} SMs, L2 ${p.l2CacheBytes / MiB} MiB); copy ${copyGigabytesPerSecond.toFixed(0)} GB/s (read + written)`,
  ...markdownTable(
    [
      'projection',
      'K→N',
      'rows',
      'tiles, chunks',
      'ours µs',
      'weight GB/s',
      '% of copy',
      'TFLOP/s',
      'last-block combine µs, % of copy',
      'cuBLASLt µs',
      '% of copy',
      'TFLOP/s',
      'anchor',
    ],
    results.map((r) => [
      r.shape,
      `${r.inFeatures}→${r.outFeatures}`,
      `${r.rows}`,
      `${r.tiles}, ${r.chunks}`,
      r.microseconds.toFixed(2),
      r.weightGigabytesPerSecond.toFixed(0),
      percent(r.shareOfCopy),
      r.teraflops.toFixed(1),
      r.lastBlockMicroseconds === undefined
        ? '—'
        : `${r.lastBlockMicroseconds.toFixed(2)}, ${percent(r.lastBlockShareOfCopy!)}`,
      r.cublasMicroseconds.toFixed(2),
      percent(r.cublasShareOfCopy),
      r.cublasTeraflops.toFixed(1),
      r.anchor,
    ]),
  ),
];
console.log(lines.join('\n'));
console.log(
  [
    '',
    `projections of one x: separate GEMMs against one segmented launch (GB/s of weights; copy ${copyGigabytesPerSecond.toFixed(0)} GB/s)`,
    ...markdownTable(
      ['projections', 'K→N', 'rows', 'weight MB', 'separate µs', 'GB/s', 'segmented µs', 'GB/s', 'speedup'],
      fused.map((r) => [
        r.set,
        `${r.inFeatures}→${r.outFeatures.join('+')}`,
        `${r.rows}`,
        (r.weightBytes / 1e6).toFixed(1),
        r.separateMicroseconds.toFixed(2),
        r.separateGigabytesPerSecond.toFixed(0),
        r.segmentedMicroseconds.toFixed(2),
        r.segmentedGigabytesPerSecond.toFixed(0),
        `${r.speedup.toFixed(2)}×`,
      ]),
    ),
  ].join('\n'),
);
const decodeLarge = results.filter((r) => r.rows === 1 && r.inFeatures * r.outFeatures >= 2048 * 4096);
const worst = Math.min(...decodeLarge.map((r) => r.shareOfCopy));
console.log(
  `one row at ≥ 70% of copy for N·K ≥ 2048·4096: ${worst >= 0.7 ? 'met' : 'NOT met'} (worst ${percent(worst)})`,
);
writeReport('gpu-gemm.json', { device: p, copyGigabytesPerSecond, results, fused, cublasLtVersion: blas.version });
cuda.close();
