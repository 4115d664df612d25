// Gated DeltaNet kernels at the real geometry (Kh 16, Vh 32, 128-dim heads, C = 8192 conv channels), one layer:
//   decode    batch 1, 8, 64 lanes × 1 row: conv + SiLU, gates, recurrence; the recurrence's state bytes moved
//             (read + written, 64 KiB fp32 per lane and value head) against the copy bandwidth measured here
//   prefill   one sequence of 4096 rows through the same three kernels
// Every figure is the median of 21 replays of a captured CUDA graph; decode launches rotate over slots whose state
// spans four times the L2, so the state streams from memory as it does in a step. Beside each figure the per-op
// anchors of flash-linear-attention on the H200 (fused recurrent decode, chunked prefill).
// Prints one table; writes gpu-delta-net.json to the output directory. Usage: tsx bench/gpu-delta-net.ts [dir]
import fs from 'node:fs';
import path from 'node:path';
import { CudaContext } from '../src/backend/cuda/context.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import { CapturedGraph } from '../src/backend/cuda/graph.ts';
import type { Allocation } from '../src/backend/cuda/memory.ts';
import { deltaNetConv, deltaNetGates, deltaNetRecurrence } from '../src/backend/cuda/ops/deltaNet.ts';
import { float32ToBf16Bits } from '../src/numeric/dtypes.ts';

const KEY_HEADS = 16;
const VALUE_HEADS = 32;
const HEAD_DIM = 128;
const CHANNELS = (2 * KEY_HEADS + VALUE_HEADS) * HEAD_DIM;
const PROJECTION_WIDTH = 12352;
const STATE_BYTES_PER_LANE = VALUE_HEADS * HEAD_DIM * HEAD_DIM * 4;
const CONV_STATE_BYTES_PER_LANE = 3 * CHANNELS * 2;
const MiB = 1024 * 1024;
const REPLAYS = 21;
/** flash-linear-attention on the H200, 2026-12-01 (one layer). */
const ANCHORS: Record<string, string> = {
  'decode 1': 'fla fused recurrent 3.8 µs',
  'decode 64': 'fla fused recurrent 95 µs (state 2.8 TB/s)',
  'prefill 4096': 'fla chunked 0.58 ms',
};

const availability = cudaAvailability();
if (!availability.available) {
  console.log(`gpu-delta-net needs a CUDA device: ${availability.reason}`);
  process.exit(0);
}
const cuda = new CudaContext();
const held: Allocation[] = [];

function allocate(bytes: number, label: string): Allocation {
  const allocation = cuda.allocate(bytes, label);
  held.push(allocation);
  return allocation;
}

function upload(values: ArrayBufferView, label: string): Allocation {
  const allocation = cuda.upload(values, label);
  held.push(allocation);
  return allocation;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Milliseconds per replay of a graph of what `enqueue` launches: the median of REPLAYS event-timed replays. */
function timeGraph(enqueue: () => void): number {
  enqueue();
  cuda.synchronize();
  const graph = CapturedGraph.capture(cuda.driver, cuda.stream, enqueue);
  const start = cuda.driver.createEvent();
  const end = cuda.driver.createEvent();
  graph.launch(cuda.stream);
  const samples: number[] = [];
  for (let replay = 0; replay < REPLAYS; replay++) {
    cuda.driver.recordEvent(start, cuda.stream);
    graph.launch(cuda.stream);
    cuda.driver.recordEvent(end, cuda.stream);
    cuda.driver.synchronizeEvent(end);
    samples.push(cuda.driver.elapsedMilliseconds(start, end));
  }
  cuda.driver.destroyEvent(start);
  cuda.driver.destroyEvent(end);
  graph.destroy();
  return median(samples);
}

const randomBlock = new Uint16Array(8 * MiB).map(() =>
  float32ToBf16Bits(Math.sqrt(-2 * Math.log(1 - Math.random())) * Math.cos(2 * Math.PI * Math.random())),
);

/** Random normal bf16 values: one 16 MiB random block tiled over the buffer. */
function randomBuffer(bytes: number, label: string): Allocation {
  const block = randomBlock.subarray(0, Math.min(bytes / 2, randomBlock.length));
  const allocation = allocate(bytes, label);
  cuda.driver.copyHostToDevice(allocation.pointer, block, block.byteLength, cuda.stream);
  for (let offset = block.byteLength; offset < bytes; offset += block.byteLength) {
    const chunk = Math.min(block.byteLength, bytes - offset);
    cuda.driver.copyDeviceToDevice(allocation.pointer + BigInt(offset), allocation.pointer, chunk, cuda.stream);
  }
  cuda.synchronize();
  return allocation;
}

function measureCopy(): number {
  const bytes = 1024 * MiB;
  const source = randomBuffer(bytes, 'copy source');
  const target = allocate(bytes, 'copy target');
  const milliseconds = timeGraph(() => {
    for (let index = 0; index < 5; index++) {
      cuda.driver.copyDeviceToDevice(target.pointer, source.pointer, bytes, cuda.stream);
    }
  });
  return (5 * 2 * bytes) / milliseconds / 1e6;
}

/** Sequence tables of `sets` rotations of `lanes` lanes, each lane one row at its own slot, or one long sequence. */
function tables(sets: number, lanes: number, rowsEach: number): bigint[] {
  return Array.from({ length: sets }, (_, set) => {
    const table = new Int32Array(lanes * 4);
    for (let lane = 0; lane < lanes; lane++) table.set([set * lanes + lane, lane * rowsEach, rowsEach, 0], lane * 4);
    return upload(table, `sequence table ${set}`).pointer;
  });
}

interface Buffers {
  readonly projection: Allocation;
  readonly convOut: Allocation;
  readonly g: Allocation;
  readonly beta: Allocation;
  readonly out: Allocation;
  readonly aLog: Allocation;
  readonly dtBias: Allocation;
  readonly weight: Allocation;
}

function buffers(rows: number): Buffers {
  const small = (seed: number) => Float32Array.from({ length: VALUE_HEADS }, (_, head) => 0.3 * Math.sin(seed + head));
  return {
    projection: randomBuffer(rows * PROJECTION_WIDTH * 2, 'projection'),
    convOut: allocate(rows * CHANNELS * 2, 'conv out'),
    g: allocate(rows * VALUE_HEADS * 4, 'g'),
    beta: allocate(rows * VALUE_HEADS * 4, 'beta'),
    out: allocate(rows * VALUE_HEADS * HEAD_DIM * 2, 'out'),
    aLog: upload(small(1), 'A_log'),
    dtBias: upload(small(2), 'dt_bias'),
    weight: randomBuffer(CHANNELS * 4 * 2, 'conv weight'),
  };
}

function launchers(b: Buffers, rows: number, convState: bigint, state: bigint) {
  const gateColumn = BigInt((2 * KEY_HEADS + 2 * VALUE_HEADS) * HEAD_DIM * 2);
  return {
    conv: (table: bigint, sequenceCount: number, longestSequence: number) =>
      deltaNetConv(cuda, {
        out: b.convOut.pointer,
        outRowStride: CHANNELS,
        x: b.projection.pointer,
        xRowStride: PROJECTION_WIDTH,
        weight: b.weight.pointer,
        convState,
        sequences: table,
        sequenceCount,
        longestSequence,
        channels: CHANNELS,
      }),
    gates: () =>
      deltaNetGates(cuda, {
        g: b.g.pointer,
        beta: b.beta.pointer,
        b: b.projection.pointer + gateColumn,
        a: b.projection.pointer + gateColumn + BigInt(VALUE_HEADS * 2),
        rowStride: PROJECTION_WIDTH,
        aLog: b.aLog.pointer,
        dtBias: b.dtBias.pointer,
        rows,
        valueHeads: VALUE_HEADS,
      }),
    recurrence: (table: bigint, sequenceCount: number) =>
      deltaNetRecurrence(cuda, {
        out: b.out.pointer,
        qkv: b.convOut.pointer,
        qkvRowStride: CHANNELS,
        g: b.g.pointer,
        beta: b.beta.pointer,
        state,
        sequences: table,
        sequenceCount,
        keyHeads: KEY_HEADS,
        valueHeads: VALUE_HEADS,
      }),
  };
}

function measureDecode(batch: number, copyGigabytesPerSecond: number) {
  const sets = Math.max(2, Math.ceil((4 * cuda.properties.l2CacheBytes) / (batch * STATE_BYTES_PER_LANE)));
  const slots = sets * batch;
  const state = allocate(slots * STATE_BYTES_PER_LANE, 'recurrent state');
  const convState = allocate(slots * CONV_STATE_BYTES_PER_LANE, 'conv state');
  cuda.driver.fillBytes(state.pointer, 0, slots * STATE_BYTES_PER_LANE, cuda.stream);
  cuda.driver.fillBytes(convState.pointer, 0, slots * CONV_STATE_BYTES_PER_LANE, cuda.stream);
  const b = buffers(batch);
  const run = launchers(b, batch, convState.pointer, state.pointer);
  const sequenceTables = tables(sets, batch, 1);
  run.conv(sequenceTables[0]!, batch, 1);
  run.gates();
  const launches = sets * 4;
  const perLaunch = (enqueue: (table: bigint) => void) =>
    (timeGraph(() => {
      for (let index = 0; index < launches; index++) enqueue(sequenceTables[index % sets]!);
    }) *
      1000) /
    launches;
  const convMicroseconds = perLaunch((table) => run.conv(table, batch, 1));
  const gatesMicroseconds = perLaunch(() => run.gates());
  const recurrenceMicroseconds = perLaunch((table) => run.recurrence(table, batch));
  const stateBytes = 2 * batch * STATE_BYTES_PER_LANE;
  const gigabytesPerSecond = stateBytes / recurrenceMicroseconds / 1e3;
  return {
    batch,
    convMicroseconds,
    gatesMicroseconds,
    recurrenceMicroseconds,
    stateBytes,
    gigabytesPerSecond,
    shareOfCopy: gigabytesPerSecond / copyGigabytesPerSecond,
  };
}

function measurePrefill(rows: number) {
  const state = allocate(STATE_BYTES_PER_LANE, 'recurrent state');
  const convState = allocate(CONV_STATE_BYTES_PER_LANE, 'conv state');
  cuda.driver.fillBytes(state.pointer, 0, STATE_BYTES_PER_LANE, cuda.stream);
  cuda.driver.fillBytes(convState.pointer, 0, CONV_STATE_BYTES_PER_LANE, cuda.stream);
  const b = buffers(rows);
  const run = launchers(b, rows, convState.pointer, state.pointer);
  const [table] = tables(1, 1, rows);
  run.conv(table!, 1, rows);
  run.gates();
  const convMilliseconds = timeGraph(() => run.conv(table!, 1, rows));
  const gatesMilliseconds = timeGraph(() => run.gates());
  const recurrenceMilliseconds = timeGraph(() => run.recurrence(table!, 1));
  const totalMilliseconds = convMilliseconds + gatesMilliseconds + recurrenceMilliseconds;
  return {
    rows,
    convMilliseconds,
    gatesMilliseconds,
    recurrenceMilliseconds,
    rowsPerSecond: rows / (totalMilliseconds / 1000),
  };
}

function release(): void {
  for (const allocation of held.splice(0)) allocation.free();
}

const outputDirectory = path.resolve(process.argv[2] ?? '.');
const copy = measureCopy();
release();
const decode = [1, 8, 64].map((batch) => {
  const result = measureDecode(batch, copy);
  release();
  return result;
});
const prefill = measurePrefill(4096);
release();

const p = cuda.properties;
const lines = [
  `Gated DeltaNet, one layer (Kh ${KEY_HEADS}, Vh ${VALUE_HEADS}, d ${HEAD_DIM}) on ${p.name}; copy ${copy.toFixed(0)} GB/s`,
  '| case | conv + SiLU | gates | recurrence | recurrence state (read + write) | anchor |',
  '|---|---|---|---|---|---|',
  ...decode.map(
    (d) =>
      `| decode ${d.batch} | ${d.convMicroseconds.toFixed(2)} µs | ${d.gatesMicroseconds.toFixed(2)} µs | ` +
      `${d.recurrenceMicroseconds.toFixed(2)} µs | ${(d.stateBytes / MiB).toFixed(0)} MiB, ` +
      `${d.gigabytesPerSecond.toFixed(0)} GB/s, ${(100 * d.shareOfCopy).toFixed(1)}% of copy | ` +
      `${ANCHORS[`decode ${d.batch}`] ?? '—'} |`,
  ),
  `| prefill ${prefill.rows} | ${prefill.convMilliseconds.toFixed(3)} ms | ${prefill.gatesMilliseconds.toFixed(3)} ms | ` +
    `${prefill.recurrenceMilliseconds.toFixed(3)} ms | ${prefill.rowsPerSecond.toFixed(0)} rows/s (all three) | ` +
    `${ANCHORS[`prefill ${prefill.rows}`]} |`,
];
console.log(lines.join('\n'));
fs.mkdirSync(outputDirectory, { recursive: true });
const report = { device: p, copyGigabytesPerSecond: copy, decode, prefill, anchors: ANCHORS };
fs.writeFileSync(path.join(outputDirectory, 'gpu-delta-net.json'), `${JSON.stringify(report, null, 2)}\n`);
cuda.close();
