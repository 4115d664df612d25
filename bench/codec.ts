// Codec throughput on this CPU: decode (whole and streamed one frame at a time), the codec's own encode, and each
// audio-format encoder of src/audio/ fed the decoded audio in frame-sized pieces. Rates are in 2048-sample frames
// per second (21.53 frames = 1 s of audio). Prints one table; `--json FILE` also writes the rows as JSON.
// Usage: npx tsx bench/codec.ts [--config tiny|real] [--frames N] [--json FILE]
// Synthetic (random) weights: the audio is noise, the timing is what matters.
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { createAudioEncoder } from '../src/audio/encoder.ts';
import type { AudioEncoder } from '../src/audio/encoders/common.ts';
import { AUDIO_FORMATS, type AudioFormat } from '../src/audio/formats.ts';
import { Codec } from '../src/codec/codec.ts';
import { REAL_CODEC_CONFIG, TINY_CODEC_CONFIG } from '../src/codec/config.ts';
import { synthesizeCodecWeights } from '../src/codec/synth-weights.ts';
import type { Frame } from '../src/model/types.ts';

interface Row {
  readonly what: string;
  /** Frames per second of wall-clock time (best run). */
  readonly framesPerSecond: number | undefined;
  /** Frames per second of this process's CPU time (best run): steadier when other work shares the machine. */
  readonly framesPerCpuSecond: number | undefined;
  readonly realTime: number | undefined;
  readonly note: string;
}

interface Rate {
  readonly wall: number;
  readonly cpu: number;
}

const FRAMES_PER_SECOND_OF_AUDIO = 44100 / 2048;

const { values } = parseArgs({
  options: {
    config: { type: 'string', default: 'tiny' },
    frames: { type: 'string', default: '64' },
    json: { type: 'string' },
  },
});
const config = values.config === 'real' ? REAL_CODEC_CONFIG : TINY_CODEC_CONFIG;
const frameCount = Number(values.frames);

/** Best of `repeats` runs (after one warm-up), in frames per wall-clock and per CPU second. */
function measure(frames: number, repeats: number, run: () => void): Rate {
  run();
  let bestWall = Number.POSITIVE_INFINITY;
  let bestCpu = Number.POSITIVE_INFINITY;
  for (let repeat = 0; repeat < repeats; repeat++) {
    const started = performance.now();
    const cpuStarted = process.cpuUsage();
    run();
    const cpu = process.cpuUsage(cpuStarted);
    bestWall = Math.min(bestWall, performance.now() - started);
    bestCpu = Math.min(bestCpu, (cpu.user + cpu.system) / 1000);
  }
  return { wall: (frames * 1000) / bestWall, cpu: (frames * 1000) / bestCpu };
}

function row(what: string, rate: Rate | undefined, note = ''): Row {
  const realTime = rate === undefined ? undefined : rate.wall / FRAMES_PER_SECOND_OF_AUDIO;
  return { what, framesPerSecond: rate?.wall, framesPerCpuSecond: rate?.cpu, realTime, note };
}

const codec = Codec.fromWeights(config, synthesizeCodecWeights(config, 1));
const frames: Frame[] = Array.from({ length: frameCount }, (_, index) =>
  Int32Array.from(
    { length: 1 + config.residualCodebooks },
    (_, codebook) =>
      (index * 7919 + codebook * 104729) % (codebook === 0 ? config.semanticCodebookSize : config.residualCodebookSize),
  ),
);
const repeats = values.config === 'real' ? 1 : 3;
const rows: Row[] = [];
rows.push(
  row(
    'codec decode (whole)',
    measure(frameCount, repeats, () => codec.decode(frames)),
  ),
);
rows.push(
  row(
    'codec decode (stream, 1 frame/push)',
    measure(frameCount, repeats, () => {
      const stream = codec.openStream();
      for (const frame of frames) stream.push([frame]);
    }),
  ),
);
const pcm = codec.decode(frames);
rows.push(
  row(
    'codec encode (audio → codes)',
    measure(frameCount, repeats, () => codec.encode(pcm)),
  ),
);

const ENCODER_START_LIMIT_MS = 20_000;

/** An encoder, or a refusal when it does not start in time (so one broken format cannot stall the table). */
async function withinStartLimit(format: AudioFormat): Promise<AudioEncoder> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`did not start within ${ENCODER_START_LIMIT_MS / 1000} s`)),
      ENCODER_START_LIMIT_MS,
    );
  });
  try {
    return await Promise.race([createAudioEncoder(format, { sampleRate: config.sampleRate }), limit]);
  } finally {
    clearTimeout(timer);
  }
}

/** Frames per second of one audio-format encoder fed the decoded audio in frame-sized pieces. */
async function timeEncoder(format: AudioFormat): Promise<Rate> {
  // The factory is async and loads codec libraries: make every encoder before the clock starts.
  const encoders: AudioEncoder[] = [];
  for (let index = 0; index <= repeats; index++) encoders.push(await withinStartLimit(format));
  return measure(frameCount, repeats, () => {
    const encoder = encoders.shift()!;
    for (let offset = 0; offset < pcm.length; offset += config.frameLength) {
      encoder.push(pcm.subarray(offset, offset + config.frameLength));
    }
    encoder.finish();
  });
}

for (const format of AUDIO_FORMATS) {
  try {
    rows.push(row(`${format} encoder (${config.sampleRate} Hz)`, await timeEncoder(format)));
  } catch (error) {
    rows.push(row(`${format} encoder`, undefined, (error as Error).message));
  }
}

const cpu = cpus()[0]?.model ?? 'unknown CPU';
console.log(`codec ${values.config} (synthetic weights), ${frameCount} frames, one thread of ${cpu}`);
const load = loadavg()[0]!.toFixed(1);
console.log(
  `${'what'.padEnd(40)} ${'frames/s'.padStart(10)} ${'frames/cpu-s'.padStart(13)} ${'× real time'.padStart(12)}  note`,
);
for (const entry of rows) {
  const rate = entry.framesPerSecond === undefined ? '-' : entry.framesPerSecond.toFixed(1);
  const cpuRate = entry.framesPerCpuSecond === undefined ? '-' : entry.framesPerCpuSecond.toFixed(1);
  const realTime = entry.realTime === undefined ? '-' : entry.realTime.toFixed(2);
  console.log(
    `${entry.what.padEnd(40)} ${rate.padStart(10)} ${cpuRate.padStart(13)} ${realTime.padStart(12)}  ${entry.note}`,
  );
}
console.log(`load average at the end: ${load} on ${cpus().length} cores`);
if (values.json !== undefined) {
  await writeFile(
    values.json,
    `${JSON.stringify({ config: values.config, frames: frameCount, cpu, load, rows }, null, 1)}\n`,
  );
}
