// The sampler kernels' latency: sample_main over 4097 candidates and sample_code over 1024 entries, at 1, 8 and 64
// lanes, with the release's settings (temperature 1, top-p 0.9, top-k 30) and with top-k off (the full-ranking path).
// Ten launches are captured in one CUDA graph and replayed; the table gives µs per launch (the median of 20 replays)
// beside the time the logits take to read at the copy bandwidth measured in the same run (the bytes are tiny: the
// sampler is latency-bound, and ten of these run per frame).
// Usage: tsx bench/gpu-sampler.ts [output directory]
import fs from 'node:fs';
import path from 'node:path';
import { laneSampling } from '../src/backend/cpu/ops/sampling.ts';
import { CudaContext } from '../src/backend/cuda/context.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import { CapturedGraph } from '../src/backend/cuda/graph.ts';
import { LANE_TABLE_STRIDE, sampleCode, sampleMain, writeLaneEntry } from '../src/backend/cuda/ops/sampler.ts';

const availability = cudaAvailability();
if (!availability.available) {
  console.log(`gpu-sampler needs a CUDA device: ${availability.reason}`);
  process.exit(0);
}
const cuda = new CudaContext();
const LAUNCHES = 10;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Milliseconds per replay of `graph`, median of `trials`. */
function timeGraph(graph: CapturedGraph, trials = 20): number {
  const start = cuda.driver.createEvent();
  const end = cuda.driver.createEvent();
  for (let warmup = 0; warmup < 3; warmup++) graph.launch(cuda.stream);
  const samples: number[] = [];
  for (let trial = 0; trial < trials; trial++) {
    cuda.driver.recordEvent(start, cuda.stream);
    graph.launch(cuda.stream);
    cuda.driver.recordEvent(end, cuda.stream);
    cuda.driver.synchronizeEvent(end);
    samples.push(cuda.driver.elapsedMilliseconds(start, end));
  }
  cuda.driver.destroyEvent(start);
  cuda.driver.destroyEvent(end);
  return median(samples);
}

function copyGigabytesPerSecond(): number {
  const bytes = 1 << 30;
  const source = cuda.allocate(bytes, 'copy source');
  const target = cuda.allocate(bytes, 'copy target');
  cuda.driver.fillWords(source.pointer, 0x3f803f80, bytes / 4, cuda.stream);
  const graph = CapturedGraph.capture(cuda.driver, cuda.stream, () =>
    cuda.driver.copyDeviceToDevice(target.pointer, source.pointer, bytes, cuda.stream),
  );
  const milliseconds = timeGraph(graph, 7);
  graph.destroy();
  source.free();
  target.free();
  return (2 * bytes) / milliseconds / 1e6;
}

const copy = copyGigabytesPerSecond();
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
      const common = { out: out.pointer, outStride: 11, logits: logitsDevice.pointer, logitsStride: count, count };
      const graph = CapturedGraph.capture(cuda.driver, cuda.stream, () => {
        for (let launch = 0; launch < LAUNCHES; launch++) {
          if (kernel === 'sample_main') {
            sampleMain(cuda, {
              ...common,
              outOffset: 0,
              semanticCount: 4096,
              laneTable: tableDevice.pointer,
              lanes,
              rasWindow: windows.pointer,
            });
          } else {
            sampleCode(cuda, {
              ...common,
              outOffset: 1 + launch,
              column: 1 + (launch % 9),
              laneTable: tableDevice.pointer,
              lanes,
            });
          }
        }
      });
      const microseconds = (timeGraph(graph) / LAUNCHES) * 1000;
      const readMicroseconds = ((lanes * count * 4) / (copy * 1e9)) * 1e6;
      rows.push({ kernel, lanes, topK, microseconds, readMicroseconds });
      graph.destroy();
      for (const allocation of [logitsDevice, tableDevice, windows, out]) allocation.free();
    }
  }
}

console.log(`\nsampler on ${cuda.properties.name}; copy ${copy.toFixed(0)} GB/s (read + write)\n`);
console.log('| kernel | lanes | top-k | µs per launch | logits read at copy rate (µs) |');
console.log('|---|---|---|---|---|');
for (const row of rows) {
  console.log(
    `| ${row.kernel} | ${row.lanes} | ${row.topK} | ${row.microseconds.toFixed(1)} | ${row.readMicroseconds.toFixed(2)} |`,
  );
}
const output = process.argv[2];
if (output !== undefined) {
  fs.mkdirSync(output, { recursive: true });
  fs.writeFileSync(path.join(output, 'gpu-sampler.json'), JSON.stringify({ copy, rows }, null, 2));
}
cuda.close();
