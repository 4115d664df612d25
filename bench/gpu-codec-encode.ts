// GPU bench of the codec encode (src/codec/cuda/encoder.ts) at the real codec geometry with synthetic weights in the
// real format: 5 s and 20 s references (deterministic tones and noise), wall time from PCM on the host to codes on the
// host, median of 5 after a warm encode, in the f16 (tensor cores, the release's), f16-weights and fp32 modes and at
// 64, 256 and 512 frames per pass (512 holds a 20 s reference in one), beside the audio-seconds per second it implies; then where one 5 s and one 20 s encode's device time goes, by kernel and by
// launch (the slowest, by their index in the call's launch order).
// Synthetic weights give codes of noise, not speech. Writes gpu-codec-encode.json to the folder in argv[2].
// Usage: tsx bench/gpu-codec-encode.ts [output directory]   (DRAMA3_ENCODE_PRECISIONS=f16,f32 to run only those modes)
import { performance } from 'node:perf_hooks';
import { CudaContext } from '../src/backend/cuda/context.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import type { CodecPrecision } from '../src/backend/cuda/ops/codecConv.ts';
import { REAL_CODEC_CONFIG } from '../src/codec/config.ts';
import { CudaCodecEncoder } from '../src/codec/cuda/encoder.ts';
import { benchPrecisions } from './support/codec-precisions.ts';
import { bytesDigest } from './support/digest.ts';
import { median } from './support/gpu-timing.ts';
import { type LaunchProfile, profileLaunches } from './support/launch-profile.ts';
import { markdownTable, writeReport } from './support/output.ts';
import { realCodecWeights } from './support/real-codec-weights.ts';

const config = REAL_CODEC_CONFIG;
const SECONDS = [5, 20] as const;
const PASSES = [64, 256, 512] as const;
const RUNS = 5;
/** Launches of a profiled encode listed one by one, slowest first. */
const SLOWEST_LAUNCHES = 24;

const availability = cudaAvailability();
if (!availability.available) {
  console.log(`gpu-codec-encode needs a CUDA device: ${availability.reason}`);
  process.exit(0);
}
const cuda = new CudaContext();
const weights = realCodecWeights();

/** Three drifting tones and a little noise, amplitude about 0.3: deterministic, so every run encodes the same. */
function referenceAudio(seconds: number): Float32Array {
  let state = 0x2545f491;
  return Float32Array.from({ length: Math.round(seconds * config.sampleRate) }, (_, index) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    const time = index / config.sampleRate;
    const tones = Math.sin(2 * Math.PI * 220 * time) + 0.5 * Math.sin(2 * Math.PI * (330 + 40 * time) * time);
    return 0.2 * tones + 0.05 * Math.sin(2 * Math.PI * 1250 * time) + 0.02 * (state / 2 ** 32 - 0.5);
  });
}

interface Row {
  precision: CodecPrecision;
  framesPerPass: number;
  seconds: number;
  milliseconds: number;
  audioSecondsPerSecond: number;
  runsMs: number[];
  /** Of the codes (bytesDigest): the same for every pass length, and across builds that keep the bits. */
  digest: string;
}

const rows: Row[] = [];
const memory: Record<string, unknown> = {};
const profiles: Record<string, LaunchProfile> = {};
for (const precision of benchPrecisions('DRAMA3_ENCODE_PRECISIONS')) {
  for (const framesPerPass of PASSES) {
    const encoder = CudaCodecEncoder.create(cuda, config, weights, { framesPerPass, precision });
    try {
      memory[`${precision}, ${framesPerPass} frames per pass`] = encoder.bytes;
      encoder.encode(referenceAudio(1));
      for (const seconds of SECONDS) {
        const audio = referenceAudio(seconds);
        const runsMs: number[] = [];
        for (let run = 0; run < RUNS; run++) {
          cuda.synchronize();
          const started = performance.now();
          encoder.encode(audio);
          runsMs.push(performance.now() - started);
        }
        const milliseconds = median(runsMs);
        const codes = encoder.encode(audio).frames;
        const digest = bytesDigest(Int32Array.from(codes.flatMap((frame) => [...frame])));
        rows.push({
          precision,
          framesPerPass,
          seconds,
          milliseconds,
          audioSecondsPerSecond: seconds / (milliseconds / 1000),
          runsMs,
          digest,
        });
        console.log(
          `${precision}, ${framesPerPass} frames per pass, ${seconds} s: ${milliseconds.toFixed(1)} ms (codes digest ${digest})`,
        );
      }
      if (framesPerPass === PASSES[PASSES.length - 1]) {
        for (const seconds of SECONDS) {
          const audio = referenceAudio(seconds);
          profiles[`${precision}, ${seconds} s`] = profileLaunches(cuda, () => encoder.encode(audio), {
            sequence: true,
          });
        }
      }
    } finally {
      encoder.close();
    }
  }
}

console.log(`\n## Codec encode on ${cuda.properties.name}, real geometry, synthetic weights`);
const table = markdownTable(
  ['weights', 'frames per pass', 'reference s', `ms (median of ${RUNS})`, 'audio-s/s'],
  rows.map((row) => [
    row.precision,
    String(row.framesPerPass),
    String(row.seconds),
    row.milliseconds.toFixed(1),
    row.audioSecondsPerSecond.toFixed(0),
  ]),
);
console.log(table.join('\n'));
for (const [label, profile] of Object.entries(profiles)) {
  console.log(
    `\n### ${label}: ${profile.launches} launches, ${profile.milliseconds.toFixed(2)} ms with events between`,
  );
  const top = markdownTable(
    ['kernel', 'launches', 'ms', 'share'],
    profile.kernels
      .slice(0, 12)
      .map((entry) => [
        entry.kernel,
        String(entry.launches),
        entry.milliseconds.toFixed(3),
        `${(100 * entry.share).toFixed(1)}%`,
      ]),
  );
  console.log(top.join('\n'));
  const slowest = (profile.sequence ?? [])
    .map((entry, index) => ({ ...entry, index }))
    .sort((a, b) => b.milliseconds - a.milliseconds)
    .slice(0, SLOWEST_LAUNCHES);
  console.log(`\nslowest ${SLOWEST_LAUNCHES} launches (index in the call's launch order):`);
  console.log(
    markdownTable(
      ['index', 'kernel', 'ms'],
      slowest.map((entry) => [String(entry.index), entry.kernel, entry.milliseconds.toFixed(3)]),
    ).join('\n'),
  );
}
const file = writeReport('gpu-codec-encode.json', { device: cuda.properties.name, memory, rows, profiles });
console.log(`wrote ${file}`);
cuda.close();
