// The sampler kernels' latency: sample_main over 4097 candidates and sample_code over 1024 entries, at 1, 8 and 64
// lanes, with the release's settings (temperature 1, top-p 0.9, top-k 30) and with top-k off (the full-ranking path).
// Ten launches are captured in one CUDA graph and replayed; the table gives µs per launch (the median of 20 replays)
// beside the time the logits take to read at the copy bandwidth measured in the same run (the bytes are tiny: the
// sampler is latency-bound, and ten of these run per frame). The copy figure is the shared one of
// bench/support/roofline.ts (1 GiB, warmed up), higher than the single captured copy this bench timed before.
// Writes gpu-sampler.json to the output directory.
// Usage: tsx bench/gpu-sampler.ts [output directory]
import { laneSampling } from '../src/backend/cpu/ops/sampling.ts';
import { CudaContext } from '../src/backend/cuda/context.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import { LANE_TABLE_STRIDE, sampleCode, sampleMain, writeLaneEntry } from '../src/backend/cuda/ops/sampler.ts';
import { timeGraph } from './support/gpu-timing.ts';
import { markdownTable, writeReport } from './support/output.ts';
import { copyBandwidth } from './support/roofline.ts';

const availability = cudaAvailability();
if (!availability.available) {
  console.log(`gpu-sampler needs a CUDA device: ${availability.reason}`);
  process.exit(0);
}
const cuda = new CudaContext();
const LAUNCHES = 10;

const copy = copyBandwidth(cuda).gigabytesPerSecond;
const rows: { kernel: string; lanes: number; topK: number; microseconds: number; readMicroseconds: number }[] = [];
for (const [kernel, count] of [
  ['sample_main', 4097],
  ['sample_code', 1024],
] as const) {
  for (const topK of [30, 0]) {
    for (const lanes of [1, 8, 64]) {
      const logits = new Float32Array(lanes * count).map(() => 3 * Math.sqrt(-2 * Math.log(1 - Math.random())));
      const table = new Int32Array(lanes * LANE_TABLE_STRIDE);
      for (let b = 0; b < lanes; b++) {
        const sampling = laneSampling({ seed: b, temperature: 1, topP: 0.9, topK, greedy: false });
        writeLaneEntry(table, b, { slot: b, position: 0, frame: 0, sampling });
      }
      const logitsDevice = cuda.upload(logits, 'logits');
      const tableDevice = cuda.upload(table, 'lane table');
      const windows = cuda.upload(new Int32Array(lanes * 16).fill(-1), 'windows');
      const out = cuda.allocate(lanes * 11 * 4, 'codes');
      const candidates = cuda.upload(
        Int32Array.from({ length: count }, (_, index) => index),
        'candidates',
      );
      const common = { logits: logitsDevice.pointer, logitsStride: count, count };
      const enqueue = () => {
        for (let launch = 0; launch < LAUNCHES; launch++) {
          if (kernel === 'sample_main') {
            sampleMain(cuda, {
              ...common,
              records: out.pointer,
              recordStride: 11,
              semanticCount: 4096,
              candidates: candidates.pointer,
              laneTable: tableDevice.pointer,
              lanes,
              rasWindow: windows.pointer,
            });
          } else {
            sampleCode(cuda, {
              ...common,
              out: out.pointer,
              outStride: 11,
              outOffset: 1 + launch,
              column: 1 + (launch % 9),
              laneTable: tableDevice.pointer,
              lanes,
            });
          }
        }
      };
      const microseconds = (timeGraph(cuda, enqueue, { trials: 20, warmups: 3 }) / LAUNCHES) * 1000;
      const readMicroseconds = ((lanes * count * 4) / (copy * 1e9)) * 1e6;
      rows.push({ kernel, lanes, topK, microseconds, readMicroseconds });
      for (const allocation of [logitsDevice, tableDevice, windows, out, candidates]) allocation.free();
    }
  }
}

console.log(`\nsampler on ${cuda.properties.name}; copy ${copy.toFixed(0)} GB/s (read + write)\n`);
const summary = markdownTable(
  ['kernel', 'lanes', 'top-k', 'µs per launch', 'logits read at copy rate (µs)'],
  rows.map((row) => [
    row.kernel,
    `${row.lanes}`,
    `${row.topK}`,
    row.microseconds.toFixed(1),
    row.readMicroseconds.toFixed(2),
  ]),
);
console.log(summary.join('\n'));
writeReport('gpu-sampler.json', { copy, rows });
cuda.close();
