// Attention over lane-slot KV slabs at the backbone's geometry (16 query heads, 2 KV heads, D 256, gated), beside the
// per-op anchors (torch SDPA on the H200):
//   decode    batch 1 at 1k, 8k, 16k, 32k, 64k and 262k keys; batch 4 at 8k and 32k; batch 64 at 8k: time per
//             step, KV bytes read per second and their share of the device-to-device copy bandwidth measured in the
//             same run
//   prefill   4096 rows from position 0 in one call: causal TFLOP/s (4·Hq·D per visible key and row)
//   chunk     one prefill chunk of 256 rows of a slot whose keys reach ~65k and ~250k (positions start..start+255,
//             its earlier keys already in the slab): time per chunk, TFLOP/s as above; the long prefill's cost
//   both of these twice: the grouped kernel (4 rows a block, the model's choice) and the per-row kernel folding on
//   chip (1 row a block), the same bits, so that one run says which is faster
// Each figure is the median of event-timed replays of a captured graph of back-to-back launches, the KV rotated
// through more memory than L2 holds. Prints one table; writes gpu-attention.json to the output directory.
// Usage: tsx bench/gpu-attention.ts [output directory]
import { CudaContext } from '../src/backend/cuda/context.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import {
  type AttentionArguments,
  attention,
  attentionPrepare,
  attentionWorkspaceBytes,
} from '../src/backend/cuda/ops/attention.ts';
import { DeviceBuffers, randomBf16Block, rotationSets } from './support/device-buffers.ts';
import { timeGraph } from './support/gpu-timing.ts';
import { markdownTable, writeReport } from './support/output.ts';
import { copyBandwidth } from './support/roofline.ts';

const HQ = 16;
const HKV = 2;
const D = 256;
const availability = cudaAvailability();
if (!availability.available) {
  console.log(`gpu-attention needs a CUDA device: ${availability.reason}`);
  process.exit(0);
}
const cuda = new CudaContext();
const buffers = new DeviceBuffers(cuda);
const randomBlock = randomBf16Block();
const randomBuffer = (bytes: number, label: string) => buffers.tiled(bytes, randomBlock, label);
const upload = (values: Int32Array, label: string) => buffers.upload(values, label);
const release = () => buffers.release();
/** The row table of `rows` consecutive positions of slot 0 from `start`, on the device. */
const runTable = (rows: number, start: number) =>
  upload(
    Int32Array.from({ length: 2 * rows }, (_, index) => (index % 2 === 1 ? start + (index - 1) / 2 : 0)),
    'row table',
  ).pointer;

interface DecodeResult {
  readonly batch: number;
  readonly keys: number;
  readonly microseconds: number;
  readonly gigabytesPerSecond: number;
  readonly shareOfCopy: number;
}

/** One decode step of `batch` lanes, each at position keys − 1 of its own slot; slot sets rotate past L2. */
function measureDecode(batch: number, keys: number, copyGigabytesPerSecond: number): DecodeResult {
  const kvBytes = batch * keys * HKV * D * 2 * 2;
  const sets = rotationSets(cuda, kvBytes, 1);
  const slots = batch * sets;
  const geometry = { queryHeads: HQ, kvHeads: HKV, headDim: D, slots, capacity: keys };
  const slabBytes = slots * keys * HKV * D * 2;
  const keysSlab = randomBuffer(slabBytes, 'keys');
  const valuesSlab = randomBuffer(slabBytes, 'values');
  const q = randomBuffer(batch * HQ * D * 2, 'q');
  const gate = randomBuffer(batch * HQ * D * 2, 'gate');
  const out = buffers.allocate(batch * HQ * D * 2, 'out');
  const workspace = buffers.allocate(attentionWorkspaceBytes(batch, geometry), 'workspace');
  const tables = Array.from({ length: sets }, (_, set) => {
    const table = new Int32Array(2 * batch);
    for (let lane = 0; lane < batch; lane++) {
      table[2 * lane] = set * batch + lane;
      table[2 * lane + 1] = keys - 1;
    }
    return upload(table, `row table ${set}`);
  });
  const launches = Math.max(8, sets * 2);
  const enqueue = () => {
    for (let index = 0; index < launches; index++) {
      const rowTable = tables[index % sets]!.pointer;
      const a = { ...geometry, out: out.pointer, q: q.pointer, gate: gate.pointer, keys: keysSlab.pointer };
      attention(cuda, { ...a, values: valuesSlab.pointer, rowTable, rows: batch, workspace: workspace.pointer });
    }
  };
  const milliseconds = timeGraph(cuda, enqueue, { trials: 21, warmups: 2 }) / launches;
  release();
  const gigabytesPerSecond = kvBytes / milliseconds / 1e6;
  return {
    batch,
    keys,
    microseconds: milliseconds * 1000,
    gigabytesPerSecond,
    shareOfCopy: gigabytesPerSecond / copyGigabytesPerSecond,
  };
}

type RowsPerBlock = NonNullable<AttentionArguments['rowsPerBlock']>;
const ROWS_PER_BLOCK: readonly RowsPerBlock[] = [4, 1];

/** One prefill call of `rows` rows from position 0: prepare, then attention at each rows-per-block (timed apart). */
function measurePrefill(rows: number) {
  const geometry = { queryHeads: HQ, kvHeads: HKV, headDim: D, slots: 1, capacity: rows };
  const slabBytes = rows * HKV * D * 2;
  const keysSlab = randomBuffer(slabBytes, 'keys');
  const valuesSlab = randomBuffer(slabBytes, 'values');
  const qProj = randomBuffer(rows * HQ * 2 * D * 2, 'q projection');
  const kProj = randomBuffer(rows * HKV * D * 2, 'k projection');
  const vProj = randomBuffer(rows * HKV * D * 2, 'v projection');
  const norms = randomBuffer(D * 2, 'norm weights');
  const q = buffers.allocate(rows * HQ * D * 2, 'q');
  const out = buffers.allocate(rows * HQ * D * 2, 'out');
  const rowTable = runTable(rows, 0);
  const prepare = () =>
    attentionPrepare(cuda, {
      ...geometry,
      qOut: q.pointer,
      keys: keysSlab.pointer,
      values: valuesSlab.pointer,
      qProj: qProj.pointer,
      kProj: kProj.pointer,
      vProj: vProj.pointer,
      qNorm: norms.pointer,
      kNorm: norms.pointer,
      rowTable,
      rows,
      rotaryDims: 64,
      theta: 1e7,
      style: 'neox',
      gated: true,
      eps: 1e-6,
    });
  const attend = (rowsPerBlock: RowsPerBlock) => () =>
    attention(cuda, {
      ...geometry,
      out: out.pointer,
      q: q.pointer,
      gate: qProj.pointer + BigInt(D * 2),
      gateRowStride: HQ * 2 * D,
      gateHeadStride: 2 * D,
      keys: keysSlab.pointer,
      values: valuesSlab.pointer,
      rowTable,
      rows,
      workspace: 0n,
      rowsPerBlock,
    });
  const timed = (enqueue: () => void) => timeGraph(cuda, enqueue, { trials: 11, warmups: 2 });
  const prepareMilliseconds = timed(prepare);
  const visible = (rows * (rows + 1)) / 2;
  const flops = 4 * HQ * D * visible;
  const variants = ROWS_PER_BLOCK.map((rowsPerBlock) => {
    const milliseconds = timed(attend(rowsPerBlock));
    return { rowsPerBlock, milliseconds, teraflops: flops / milliseconds / 1e9 };
  });
  release();
  return { rows, prepareMilliseconds, variants };
}

/** One prefill chunk's attention: `rows` rows at positions start..start + rows − 1 of slot 0 (gated, no prepare). */
function measureChunk(start: number, rows: number, rowsPerBlock: RowsPerBlock) {
  const capacity = start + rows;
  const geometry = { queryHeads: HQ, kvHeads: HKV, headDim: D, slots: 1, capacity };
  const slabBytes = capacity * HKV * D * 2;
  const keysSlab = randomBuffer(slabBytes, 'keys');
  const valuesSlab = randomBuffer(slabBytes, 'values');
  const q = randomBuffer(rows * HQ * D * 2, 'q');
  const gate = randomBuffer(rows * HQ * D * 2, 'gate');
  const out = buffers.allocate(rows * HQ * D * 2, 'out');
  const rowTable = runTable(rows, start);
  const attend = () =>
    attention(cuda, {
      ...geometry,
      out: out.pointer,
      q: q.pointer,
      gate: gate.pointer,
      keys: keysSlab.pointer,
      values: valuesSlab.pointer,
      rowTable,
      rows,
      workspace: 0n,
      rowsPerBlock,
    });
  const milliseconds = timeGraph(cuda, attend, { trials: 5, warmups: 1 });
  release();
  const visible = rows * start + (rows * (rows + 1)) / 2;
  const flops = 4 * HQ * D * visible;
  return { start, rows, rowsPerBlock, milliseconds, teraflops: flops / milliseconds / 1e9 };
}

const copy = copyBandwidth(cuda).gigabytesPerSecond;
const anchors: Record<string, string> = {
  '1x262144': 'SDPA 139 µs (3.87 TB/s)',
  '64x8192': 'SDPA 257 µs (4.17 TB/s)',
};
const decode = [
  [1, 1024],
  [1, 8192],
  [1, 16384],
  [1, 32768],
  [1, 65536],
  [1, 262144],
  [4, 8192],
  [4, 32768],
  [64, 8192],
].map(([batch, keys]) => measureDecode(batch!, keys!, copy));
const prefill = measurePrefill(4096);
const chunks = [65536 - 256, 250000].flatMap((start) =>
  ROWS_PER_BLOCK.map((rowsPerBlock) => measureChunk(start, 256, rowsPerBlock)),
);
const perBlock = (rowsPerBlock: RowsPerBlock) =>
  rowsPerBlock === 1 ? '1 row a block (per-row kernel)' : `${rowsPerBlock} rows a block (grouped kernel)`;
const lines = [
  `gpu-attention on ${cuda.properties.name}; device-to-device copy ${copy.toFixed(0)} GB/s (read + written)`,
  ...markdownTable(
    ['op, shape', 'time', 'KV read or FLOP/s', 'share of copy', 'anchor'],
    [
      ...decode.map((r) => [
        `decode, batch ${r.batch} × ${r.keys} keys`,
        `${r.microseconds.toFixed(1)} µs`,
        `${r.gigabytesPerSecond.toFixed(0)} GB/s`,
        `${(100 * r.shareOfCopy).toFixed(1)}%`,
        anchors[`${r.batch}x${r.keys}`] ?? '—',
      ]),
      ...prefill.variants.map((variant) => [
        `prefill attention, ${prefill.rows} rows causal, ${perBlock(variant.rowsPerBlock)}`,
        `${variant.milliseconds.toFixed(3)} ms`,
        `${variant.teraflops.toFixed(1)} TFLOP/s`,
        '—',
        'SDPA 449–479 TFLOP/s',
      ]),
      ...chunks.map((chunk) => [
        `prefill chunk, ${chunk.rows} rows at keys ${chunk.start + 1}..${chunk.start + chunk.rows}, ${perBlock(chunk.rowsPerBlock)}`,
        `${chunk.milliseconds.toFixed(3)} ms`,
        `${chunk.teraflops.toFixed(1)} TFLOP/s`,
        '—',
        '—',
      ]),
      [
        `prefill prepare (norm, RoPE, KV append), ${prefill.rows} rows`,
        `${(prefill.prepareMilliseconds * 1000).toFixed(1)} µs`,
        '—',
        '—',
        '—',
      ],
    ],
  ),
];
console.log(lines.join('\n'));
writeReport('gpu-attention.json', {
  device: cuda.properties.name,
  copyGigabytesPerSecond: copy,
  decode,
  prefill,
  chunks,
});
cuda.close();
