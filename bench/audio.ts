// Audio throughput on this CPU: each encoder of src/audio/ (fed 2048-sample pieces, as the codec emits frames)
// and the resampler, in seconds of audio processed per second of wall time (higher is better). Best of 3 runs
// after a warm-up. Prints one table; `--json FILE` also writes the rows as JSON.
// Usage: npx tsx bench/audio.ts [--seconds N] [--json FILE]
import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { createAudioEncoder } from '../src/audio/encoder.ts';
import type { AudioFormat } from '../src/audio/formats.ts';
import { createResampler } from '../src/audio/resample.ts';

interface Row {
  readonly what: string;
  readonly sampleRate: number;
  readonly audioSecondsPerSecond: number;
  readonly kilobitsPerSecond: number | undefined;
}

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '10' }, json: { type: 'string' } } });
const seconds = Number(values.seconds);
const PIECE = 2048;
const REPEATS = 3;

/** A voice-like tone (harmonics of 180 Hz, vibrato, tremolo) with a little noise: codecs see realistic content. */
function speechLikeSignal(sampleRate: number): Float32Array {
  const samples = new Float32Array(Math.round(sampleRate * seconds));
  let phase = 0;
  let state = 1;
  for (let index = 0; index < samples.length; index++) {
    const time = index / sampleRate;
    phase += (2 * Math.PI * 180 * (1 + 0.03 * Math.sin(2 * Math.PI * 4 * time))) / sampleRate;
    state = (state * 1103515245 + 12345) >>> 0;
    const hiss = (state / 2 ** 32 - 0.5) * 0.01;
    const envelope = 0.6 + 0.4 * Math.sin(2 * Math.PI * 2.5 * time);
    samples[index] =
      envelope * (0.3 * Math.sin(phase) + 0.15 * Math.sin(2 * phase) + 0.08 * Math.sin(5 * phase)) + hiss;
  }
  return samples;
}

/** Best wall time in ms of `repeats` runs after one warm-up; returns the last run's result too. */
async function bestOf<T>(run: () => Promise<T> | T): Promise<{ milliseconds: number; result: T }> {
  let result = await run();
  let milliseconds = Number.POSITIVE_INFINITY;
  for (let repeat = 0; repeat < REPEATS; repeat++) {
    const started = performance.now();
    result = await run();
    milliseconds = Math.min(milliseconds, performance.now() - started);
  }
  return { milliseconds, result };
}

async function encoderRow(format: AudioFormat, sampleRate: number, bitrate?: number): Promise<Row> {
  const signal = speechLikeSignal(sampleRate);
  const { milliseconds, result: bytes } = await bestOf(async () => {
    const encoder = await createAudioEncoder(format, { sampleRate, bitrate });
    let total = 0;
    for (let offset = 0; offset < signal.length; offset += PIECE) {
      total += encoder.push(signal.subarray(offset, offset + PIECE)).length;
    }
    return total + encoder.finish().length;
  });
  const label = bitrate === undefined ? format : `${format} ${bitrate / 1000} kbit/s`;
  return {
    what: label,
    sampleRate,
    audioSecondsPerSecond: seconds / (milliseconds / 1000),
    kilobitsPerSecond: (bytes * 8) / seconds / 1000,
  };
}

async function resamplerRow(fromRate: number, toRate: number): Promise<Row> {
  const signal = speechLikeSignal(fromRate);
  const { milliseconds } = await bestOf(() => {
    const resampler = createResampler(fromRate, toRate);
    for (let offset = 0; offset < signal.length; offset += PIECE)
      resampler.push(signal.subarray(offset, offset + PIECE));
    return resampler.flush().length;
  });
  return {
    what: `resample ${fromRate} -> ${toRate}`,
    sampleRate: fromRate,
    audioSecondsPerSecond: seconds / (milliseconds / 1000),
    kilobitsPerSecond: undefined,
  };
}

const rows: Row[] = [
  await encoderRow('pcm', 24000),
  await encoderRow('wav', 44100),
  await encoderRow('flac', 44100),
  await encoderRow('mp3', 44100, 128000),
  await encoderRow('mp3', 24000, 64000),
  await encoderRow('opus', 48000, 64000),
  await encoderRow('opus', 44100, 64000),
  await encoderRow('aac', 44100, 128000),
  await resamplerRow(44100, 24000),
  await resamplerRow(44100, 48000),
  await resamplerRow(16000, 44100),
  await resamplerRow(48000, 44100),
];

console.log(`audio throughput, ${seconds} s of audio, ${cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}`);
console.log('| what | input rate | audio s / wall s | kbit/s out |');
console.log('|---|---:|---:|---:|');
for (const row of rows) {
  const bitrate = row.kilobitsPerSecond === undefined ? '' : row.kilobitsPerSecond.toFixed(1);
  console.log(`| ${row.what} | ${row.sampleRate} | ${row.audioSecondsPerSecond.toFixed(1)} | ${bitrate} |`);
}
if (values.json !== undefined) {
  await writeFile(values.json, `${JSON.stringify({ seconds, cpu: cpus()[0]?.model, rows }, null, 2)}\n`);
}
