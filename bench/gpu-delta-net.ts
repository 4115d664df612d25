// Gated DeltaNet kernels at the real geometry (Kh 16, Vh 32, 128-dim heads, C = 8192 conv channels), one layer:
//   decode    batch 1, 8, 64 lanes × 1 row: conv + SiLU, gates, recurrence; the recurrence's state bytes moved
//             (read + written, 64 KiB fp32 per lane and value head) against the copy bandwidth measured here
//   prefill   one sequence of 4096 rows through the same three kernels
// Every figure is the median of 21 replays of a captured CUDA graph; decode launches rotate over slots whose state
// spans four times the L2, so the state streams from memory as it does in a step. Beside each figure the per-op
// anchors of flash-linear-attention on the H200 (fused recurrent decode, chunked prefill). The copy figure is the
// shared one of bench/support/roofline.ts (1 GiB, warmed up), higher than the graph of copies this bench timed before.
// Prints one table; writes gpu-delta-net.json to the output directory. Usage: tsx bench/gpu-delta-net.ts [dir]
import { CudaContext } from '../src/backend/cuda/context.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import type { Allocation } from '../src/backend/cuda/memory.ts';
import { deltaNetConv, deltaNetGates, deltaNetRecurrence } from '../src/backend/cuda/ops/deltaNet.ts';
import { DeviceBuffers, MiB, randomBf16Block, rotationSets } from './support/device-buffers.ts';
import { timeGraph } from './support/gpu-timing.ts';
import { markdownTable, writeReport } from './support/output.ts';
import { copyBandwidth } from './support/roofline.ts';

const KEY_HEADS = 16;
const VALUE_HEADS = 32;
const HEAD_DIM = 128;
const CHANNELS = (2 * KEY_HEADS + VALUE_HEADS) * HEAD_DIM;
const PROJECTION_WIDTH = 12352;
const STATE_BYTES_PER_LANE = VALUE_HEADS * HEAD_DIM * HEAD_DIM * 4;
const CONV_STATE_BYTES_PER_LANE = 3 * CHANNELS * 2;
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
const device = new DeviceBuffers(cuda);
const allocate = (bytes: number, label: string) => device.allocate(bytes, label);
const upload = (values: ArrayBufferView, label: string) => device.upload(values, label);
const randomBlock = randomBf16Block();
const randomBuffer = (bytes: number, label: string) => device.tiled(bytes, randomBlock, label);

/** Milliseconds per replay of a graph of what `enqueue` launches, run once uncaptured first, median of REPLAYS. */
function timeReplays(enqueue: () => void): number {
  enqueue();
  cuda.synchronize();
  return timeGraph(cuda, enqueue, { trials: REPLAYS, warmups: 1 });
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
  const sets = rotationSets(cuda, batch * STATE_BYTES_PER_LANE);
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
    (timeReplays(() => {
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
  const convMilliseconds = timeReplays(() => run.conv(table!, 1, rows));
  const gatesMilliseconds = timeReplays(() => run.gates());
  const recurrenceMilliseconds = timeReplays(() => run.recurrence(table!, 1));
  const totalMilliseconds = convMilliseconds + gatesMilliseconds + recurrenceMilliseconds;
  return {
    rows,
    convMilliseconds,
    gatesMilliseconds,
    recurrenceMilliseconds,
    rowsPerSecond: rows / (totalMilliseconds / 1000),
  };
}

const release = () => device.release();
const copy = copyBandwidth(cuda).gigabytesPerSecond;
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
  ...markdownTable(
    ['case', 'conv + SiLU', 'gates', 'recurrence', 'recurrence state (read + write)', 'anchor'],
    [
      ...decode.map((d) => [
        `decode ${d.batch}`,
        `${d.convMicroseconds.toFixed(2)} µs`,
        `${d.gatesMicroseconds.toFixed(2)} µs`,
        `${d.recurrenceMicroseconds.toFixed(2)} µs`,
        `${(d.stateBytes / MiB).toFixed(0)} MiB, ${d.gigabytesPerSecond.toFixed(0)} GB/s, ` +
          `${(100 * d.shareOfCopy).toFixed(1)}% of copy`,
        ANCHORS[`decode ${d.batch}`] ?? '—',
      ]),
      [
        `prefill ${prefill.rows}`,
        `${prefill.convMilliseconds.toFixed(3)} ms`,
        `${prefill.gatesMilliseconds.toFixed(3)} ms`,
        `${prefill.recurrenceMilliseconds.toFixed(3)} ms`,
        `${prefill.rowsPerSecond.toFixed(0)} rows/s (all three)`,
        `${ANCHORS[`prefill ${prefill.rows}`]}`,
      ],
    ],
  ),
];
console.log(lines.join('\n'));
writeReport('gpu-delta-net.json', { device: p, copyGigabytesPerSecond: copy, decode, prefill, anchors: ANCHORS });
cuda.close();
