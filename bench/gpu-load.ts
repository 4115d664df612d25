// Checkpoint load to the device: the `small` synthetic checkpoint written to local disk, evicted from the page cache
// (fsync, then posix_fadvise DONTNEED through libc; said when that is not possible), then loaded three ways on fresh
// CUDA backends, the cache evicted again before each:
//   streamed           two pinned slots, O_DIRECT where the file system takes it (the default load)
//   streamed-buffered  the same two slots, reads through the page cache
//   per-tensor         each tensor read whole into host memory in the loaders' order, then copied (stream: false)
//   streamed, 16 I/O threads   the default load with 16 libuv threads (UV_THREADPOOL_SIZE; Node's default is 4,
//                      which bounds the reads in flight)
//   streamed, S slots, R reads   the default load with other slot and read lengths (a window is read as
//                      reads of R at once; R = S: one read a window)
//   disk only          every shard read with O_DIRECT in 16 MiB reads, 8 in flight, nothing copied: the file
//                      system's rate for these bytes, the roofline of the loads above
// Each load runs in a fresh process (so no memory freed by an earlier step is reused unseen). Each row: checkpoint
// bytes, seconds of the whole load (config to the last tensor, no plan), GB/s, whether O_DIRECT was used, the
// process's resident memory peak above where it stood with the CUDA context open (sampled every 5 ms), its peak
// resident memory in all, and its pinned peak. The full checkpoint's load time is projected from the streamed rate.
// Writes gpu-load.json to the output directory.
// Usage: tsx bench/gpu-load.ts [output directory] [checkpoint parent folder, default: the working directory]
//        [--checkpoint DIR: load this checkpoint (written before, e.g. the full one the serve bench writes) instead
//        of writing the small one] [--loads 'NAME;NAME': only these rows, by the names above]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import koffi from 'koffi';
import { alignedHostBuffers } from '../src/backend/aligned-host.ts';
import { CudaBackend } from '../src/backend/cuda/backend.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import { openShard, systemFileAccess } from '../src/checkpoint/direct-read.ts';
import { loadSpeechModel, type SpeechModelOptions } from '../src/model/load-model.ts';
import type { StreamedLoadReport } from '../src/model/streamed-source.ts';
import { formatBytes } from '../src/shared/progress.ts';
import { planCheckpoint, type SynthPreset, tokenizerFacts } from '../src/synth/plan.ts';
import { synthesizeCheckpoint } from '../src/synth/synthesize.ts';
import { defaultSynthThreads } from '../src/synth/tensor-threads.ts';
import { buildSyntheticTokenizerFiles } from '../src/text/vocabulary.ts';
import { markdownTable, writeReport } from './support/output.ts';

const availability = cudaAvailability();
if (!availability.available) {
  console.log(`gpu-load needs a CUDA device: ${availability.reason}`);
  process.exit(0);
}

const PRESET: SynthPreset = 'small';
const POSIX_FADV_DONTNEED = 4;
const CHILD_FLAG = '--load-child';
const MIB = 2 ** 20;
const LOADS: Record<string, SpeechModelOptions> = {
  streamed: { stream: {} },
  'streamed-buffered': { stream: { direct: false } },
  'per-tensor': { stream: false },
  'streamed, 16 I/O threads': { stream: {} },
  'streamed, 64 MiB slots, 16 MiB reads': { stream: { slotBytes: 64 * MIB, readPieceBytes: 16 * MIB } },
  'streamed, 64 MiB slots, 64 MiB reads': { stream: { slotBytes: 64 * MIB, readPieceBytes: 64 * MIB } },
  'streamed, 128 MiB slots, 128 MiB reads': { stream: { slotBytes: 128 * MIB, readPieceBytes: 128 * MIB } },
  'streamed, 256 MiB slots, 64 MiB reads': { stream: { slotBytes: 256 * MIB, readPieceBytes: 64 * MIB } },
};
/** Loads whose child process runs with more libuv threads. */
const THREADS: Record<string, string> = { 'streamed, 16 I/O threads': '16' };
const DISK_ONLY = 'disk only';
const DISK_READ_BYTES = 16 * 2 ** 20;
const DISK_READS_IN_FLIGHT = 8;

/** posix_fadvise from libc, or why it cannot be had. */
function fadvise(): ((fd: number) => number) | string {
  try {
    const libc = koffi.load('libc.so.6');
    const call = libc.func('int posix_fadvise(int fd, long offset, long len, int advice)');
    return (fd: number) => call(fd, 0, 0, POSIX_FADV_DONTNEED) as number;
  } catch (error) {
    return (error as Error).message;
  }
}

const advise = fadvise();

/** Flushes and evicts every shard from the page cache; returns how. */
function evict(dir: string): string {
  if (typeof advise === 'string') return `not evicted (${advise})`;
  const shards = fs.readdirSync(dir).filter((file) => file.endsWith('.safetensors'));
  for (const file of shards) {
    const fd = fs.openSync(path.join(dir, file), 'r');
    try {
      fs.fsyncSync(fd);
      const result = advise(fd);
      if (result !== 0) return `posix_fadvise answered ${result}`;
    } finally {
      fs.closeSync(fd);
    }
  }
  return 'evicted (posix_fadvise DONTNEED)';
}

interface Row {
  readonly path: string;
  readonly device: string;
  readonly bytes: number;
  readonly seconds: number;
  readonly gigabytesPerSecond: number;
  readonly direct: string;
  /** Seconds the streamed load spent reserving device storage, one allocation per tensor. */
  readonly reserveSeconds?: number;
  readonly tensors?: number;
  /** The stream's own rate: bytes over the seconds from the first read to the last copy. */
  readonly streamGigabytesPerSecond?: number;
  readonly peakRssAddedBytes: number;
  readonly maxRssBytes: number;
  readonly pinnedPeakBytes: number;
  readonly cache: string;
  readonly notices: string[];
}

/** Every shard read once with O_DIRECT, DISK_READS_IN_FLIGHT reads at a time, into aligned buffers; no copies. */
async function readDisk(dir: string): Promise<{ bytes: number; seconds: number; direct: string }> {
  const buffers = alignedHostBuffers(DISK_READS_IN_FLIGHT, DISK_READ_BYTES);
  const shards = fs.readdirSync(dir).filter((file) => file.endsWith('.safetensors'));
  let bytes = 0;
  let direct = 0;
  const started = performance.now();
  try {
    for (const file of shards) {
      const opened = await openShard(systemFileAccess, path.join(dir, file), true, () => {});
      if (opened.direct) direct += 1;
      const size = fs.statSync(path.join(dir, file)).size;
      try {
        for (let first = 0; first < size; first += DISK_READ_BYTES * DISK_READS_IN_FLIGHT) {
          const reads = buffers.buffers.map((buffer, index) => {
            const position = first + index * DISK_READ_BYTES;
            return position < size ? opened.handle.read(buffer, position) : Promise.resolve(0);
          });
          for (const read of await Promise.all(reads)) bytes += read;
        }
      } finally {
        await opened.handle.close();
      }
    }
  } finally {
    buffers.free();
  }
  const seconds = (performance.now() - started) / 1000;
  return { bytes, seconds, direct: direct === shards.length ? 'yes' : `no (${shards.length - direct} files)` };
}

/** One load in this process (the child's part): evict, open the device, load, measure. */
async function measure(dir: string, name: string, bytes: number): Promise<Row> {
  const cache = evict(dir);
  const backend = new CudaBackend();
  if (name === DISK_ONLY) {
    const disk = await readDisk(dir);
    return {
      path: name,
      device: backend.cuda.properties.name,
      bytes: disk.bytes,
      seconds: disk.seconds,
      gigabytesPerSecond: disk.bytes / disk.seconds / 1e9,
      direct: disk.direct,
      peakRssAddedBytes: 0,
      maxRssBytes: process.resourceUsage().maxRSS * 1024,
      pinnedPeakBytes: 0,
      cache,
      notices: [],
    };
  }
  const notices: string[] = [];
  let report: StreamedLoadReport | undefined;
  const options = LOADS[name]!;
  const stream = options.stream === false ? false : { ...options.stream, notice: (m: string) => notices.push(m) };
  const before = process.memoryUsage.rss();
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 5);
  const started = performance.now();
  await loadSpeechModel(dir, backend, { stream, onStreamed: (r) => (report = r) });
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage.rss());
  const files = report === undefined ? 0 : report.bufferedFiles.length + report.directFiles.length;
  const direct =
    report === undefined
      ? 'no (page cache)'
      : report.bufferedFiles.length === 0
        ? 'yes'
        : `no (${report.bufferedFiles.length} of ${files} files)`;
  return {
    path: name,
    device: backend.cuda.properties.name,
    bytes: report?.bytes ?? bytes,
    seconds,
    gigabytesPerSecond: (report?.bytes ?? bytes) / seconds / 1e9,
    direct,
    ...(report === undefined
      ? {}
      : {
          reserveSeconds: report.reserveSeconds,
          tensors: report.tensors,
          streamGigabytesPerSecond: report.bytes / (report.seconds - report.reserveSeconds) / 1e9,
        }),
    peakRssAddedBytes: peak - before,
    maxRssBytes: process.resourceUsage().maxRSS * 1024,
    pinnedPeakBytes: backend.cuda.memory.usage('pinned-host').peakBytes,
    cache,
    notices,
  };
}

/** Runs one load in a fresh process of this script and reads its row. */
function measureApart(dir: string, name: string, bytes: number): Row {
  const child = spawnSync(
    process.execPath,
    [...process.execArgv, process.argv[1]!, CHILD_FLAG, dir, name, String(bytes)],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 1 << 20,
      env: THREADS[name] === undefined ? process.env : { ...process.env, UV_THREADPOOL_SIZE: THREADS[name] },
    },
  );
  if (child.status !== 0) throw new Error(`the ${name} load exited with ${child.status}: ${child.stdout}`);
  return JSON.parse(child.stdout.trim().split('\n').at(-1)!) as Row;
}

if (process.argv[2] === CHILD_FLAG) {
  const [dir, name, bytes] = process.argv.slice(3);
  console.log(JSON.stringify(await measure(dir!, name!, Number(bytes))));
  process.exit(0);
}

const positional = process.argv
  .slice(2)
  .filter((word, index, all) => !word.startsWith('--') && !all[index - 1]?.startsWith('--'));
const flag = (name: string) => {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
};
const given = flag('--checkpoint');
const chosen = flag('--loads')?.split(';') ?? [...Object.keys(LOADS), DISK_ONLY];
const unknown = chosen.filter((name) => name !== DISK_ONLY && LOADS[name] === undefined);
if (unknown.length > 0)
  throw new Error(`unknown loads: ${unknown.join(', ')} (known: ${Object.keys(LOADS).join(', ')}, ${DISK_ONLY})`);
const parent = path.resolve(positional[1] ?? '.');
const folder = given === undefined ? fs.mkdtempSync(path.join(parent, '.gpu-load-')) : undefined;
const dir = given === undefined ? path.join(folder!, 'checkpoint') : path.resolve(given);

try {
  const tokenizer = tokenizerFacts(buildSyntheticTokenizerFiles().tokenizerJson);
  const full = planCheckpoint('full', 'fp8', tokenizer);
  const fullBytes = full.totalBytes;
  const bytes = given === undefined ? planCheckpoint(PRESET, 'fp8', tokenizer).totalBytes : 0;
  const writeStarted = performance.now();
  if (given === undefined) {
    await synthesizeCheckpoint(dir, { preset: PRESET, seed: 11, experts: 'fp8', threads: defaultSynthThreads() });
    console.log(`wrote the ${PRESET} checkpoint (${formatBytes(bytes)}) to ${dir}`);
  } else {
    console.log(`loading the checkpoint at ${dir}`);
  }
  const writeSeconds = (performance.now() - writeStarted) / 1000;
  const rows = chosen.map((name) => measureApart(dir, name, bytes));
  for (const notice of rows.flatMap((row) => row.notices)) console.log(notice);
  const table = markdownTable(
    [
      'path',
      'bytes',
      'seconds',
      'reserve s',
      'GB/s',
      'stream GB/s',
      'O_DIRECT',
      'peak RSS added',
      'max RSS',
      'pinned peak',
      'page cache',
    ],
    rows.map((row) => [
      row.path,
      formatBytes(row.bytes),
      row.seconds.toFixed(3),
      row.reserveSeconds === undefined ? '' : `${row.reserveSeconds.toFixed(3)} (${row.tensors} tensors)`,
      row.gigabytesPerSecond.toFixed(2),
      row.streamGigabytesPerSecond?.toFixed(2) ?? '',
      row.direct,
      formatBytes(row.peakRssAddedBytes),
      formatBytes(row.maxRssBytes),
      formatBytes(row.pinnedPeakBytes),
      row.cache,
    ]),
  );
  for (const line of table) console.log(line);
  const streamed = rows[0]!;
  const fullTensors = full.specs.length;
  // The reserve grows with the tensor count (one allocation each), the stream with the bytes.
  const reserveSeconds = ((streamed.reserveSeconds ?? 0) * fullTensors) / (streamed.tensors ?? 1);
  const projectedSeconds = fullBytes / ((streamed.streamGigabytesPerSecond ?? streamed.gigabytesPerSecond) * 1e9);
  console.log(
    `at the stream's rate the full checkpoint (${formatBytes(fullBytes)}, ${fullTensors} tensors) would stream in ` +
      `${projectedSeconds.toFixed(1)} s after about ${reserveSeconds.toFixed(1)} s of reserving`,
  );
  const file = writeReport('gpu-load.json', {
    device: rows[0]!.device,
    preset: given === undefined ? PRESET : 'given',
    checkpointBytes: rows[0]!.bytes,
    writeSeconds,
    rows,
    projectedFull: { bytes: fullBytes, tensors: fullTensors, projectedSeconds, reserveSeconds },
  });
  console.log(`wrote ${file}`);
} finally {
  if (folder !== undefined) fs.rmSync(folder, { recursive: true, force: true });
}
