// GPU bench of the codec decode (src/codec/cuda/) at the real codec geometry with synthetic weights in the real
// format: a single stream's first frame (fresh lane, one frame, wall time to samples on the host, median of 21), and
// 1, 8 and 64 lanes streaming together (a round of 4 frames per lane, then rounds of 16; wall time of the rounds,
// median of 3 runs on fresh lanes) in audio-seconds per second, beside the FLOP count per audio second the config
// gives (decode-flops.ts), the rate it implies as a share of a dense bf16 GEMM's measured in the same run, and
// PyTorch's decode (codec-report.ts: bench/pytorch-codec.py's pytorch-codec.json in the same folder when it ran
// first, else its last figures); and calls of 64 lanes × 1, 2 and 4 frames, as serving rounds decode (the median of
// 20, with a profile of the 1-frame call). The f16 (tensor cores, the release's precision), f16-weights and f32
// modes. Writes gpu-codec.json to the folder in argv[2].
// DRAMA3_CODEC_BENCH=profile-only makes one warm call and one call of 64 lanes × 16 frames, no timing: the run
// bench/ncu-codec.sh profiles, in DRAMA3_CODEC_PROFILE_PRECISION (f16, the tensor cores, by default; f16-weights runs
// the register-tiled convs).
// Usage: tsx bench/gpu-codec.ts [output directory]
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { CudaContext } from '../src/backend/cuda/context.ts';
import { CublasLt } from '../src/backend/cuda/cublaslt.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import type { CodecPrecision } from '../src/backend/cuda/ops/codecConv.ts';
import { REAL_CODEC_CONFIG } from '../src/codec/config.ts';
import { CudaCodecDecoder } from '../src/codec/cuda/decoder.ts';
import { decodeFlopsPerFrame } from '../src/codec/decode-flops.ts';
import type { Frame } from '../src/model/types.ts';
import { benchPrecisions } from './support/codec-precisions.ts';
import { type CodecRow, codecTable, measuredCodecBaseline, PYTORCH_CODEC_BASELINE } from './support/codec-report.ts';
import { median } from './support/gpu-timing.ts';
import { type LaunchProfile, profileLaunches } from './support/launch-profile.ts';
import { markdownTable, outputDirectory, writeReport } from './support/output.ts';
import { realCodecWeights } from './support/real-codec-weights.ts';
import { denseGemmRate } from './support/roofline.ts';

const config = REAL_CODEC_CONFIG;
const LANES = [1, 8, 64] as const;
const ROUNDS = [4, 16, 16, 16] as const;
const FIRST_FRAME_RUNS = 21;
const STREAM_RUNS = 3;
const MAX_FRAMES_PER_CALL = 1024;

const availability = cudaAvailability();
if (!availability.available) {
  console.log(`gpu-codec needs a CUDA device: ${availability.reason}`);
  process.exit(0);
}
const cuda = new CudaContext();
const weights = realCodecWeights();

let state = 0x9e3779b9;
function nextCode(size: number): number {
  state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
  return state % size;
}
function randomFrames(count: number): Frame[] {
  return Array.from({ length: count }, () => {
    const frame = new Int32Array(1 + config.residualCodebooks);
    frame[0] = nextCode(config.semanticCodebookSize);
    for (let index = 1; index < frame.length; index++) frame[index] = nextCode(config.residualCodebookSize);
    return frame;
  });
}

const flopsPerFrame = decodeFlopsPerFrame(config).total;
const framesPerSecond = config.sampleRate / config.frameLength;
const framesPerLane = ROUNDS.reduce((total, count) => total + count, 0);

interface Row extends CodecRow {
  roundMs: number[];
}

function firstFrameMs(decoder: CudaCodecDecoder): number {
  const times: number[] = [];
  for (let run = 0; run < FIRST_FRAME_RUNS; run++) {
    const slot = decoder.acquire();
    const frames = randomFrames(1);
    cuda.synchronize();
    const started = performance.now();
    decoder.decode([{ slot, frames }]);
    times.push(performance.now() - started);
    decoder.release(slot);
  }
  return median(times);
}

function streaming(decoder: CudaCodecDecoder, precision: CodecPrecision, lanes: number): Row {
  const rates: number[] = [];
  let roundMs: number[] = [];
  for (let run = 0; run < STREAM_RUNS; run++) {
    const slots = Array.from({ length: lanes }, () => decoder.acquire());
    const rounds = ROUNDS.map((count) => slots.map((slot) => ({ slot, frames: randomFrames(count) })));
    cuda.synchronize();
    const times: number[] = [];
    for (const round of rounds) {
      const started = performance.now();
      decoder.decode(round);
      times.push(performance.now() - started);
    }
    for (const slot of slots) decoder.release(slot);
    const seconds = times.reduce((total, time) => total + time, 0) / 1000;
    rates.push((lanes * framesPerLane) / framesPerSecond / seconds);
    if (run === 0) roundMs = times;
  }
  const audioSecondsPerSecond = median(rates);
  return {
    precision,
    lanes,
    audioSecondsPerSecond,
    realTimePerStream: audioSecondsPerSecond / lanes,
    teraflops: (audioSecondsPerSecond * framesPerSecond * flopsPerFrame) / 1e12,
    roundMs,
  };
}

/**
 * Calls of a few frames a lane, as serving rounds decode them (1 frame; more where the decode thread sees several
 * rounds' frames at once): the median ms of SERVING_ROUNDS calls after one warm.
 */
const SERVING_ROUNDS = 20;
const SERVING_FRAMES = [1, 2, 4];
function servingRoundMs(decoder: CudaCodecDecoder, lanes: number, frames: number): number {
  const slots = Array.from({ length: lanes }, () => decoder.acquire());
  const times: number[] = [];
  for (let round = 0; round <= SERVING_ROUNDS; round++) {
    const call = slots.map((slot) => ({ slot, frames: randomFrames(frames) }));
    cuda.synchronize();
    const started = performance.now();
    decoder.decode(call);
    if (round > 0) times.push(performance.now() - started);
  }
  for (const slot of slots) decoder.release(slot);
  return median(times);
}

/** Where one call's device time goes, by kernel (events between launches: read the shares, not the sum). */
function profileCall(decoder: CudaCodecDecoder, lanes: number, frames: number): LaunchProfile {
  const slots = Array.from({ length: lanes }, () => decoder.acquire());
  const call = slots.map((slot) => ({ slot, frames: randomFrames(frames) }));
  cuda.synchronize();
  const profile = profileLaunches(cuda, () => decoder.decode(call));
  for (const slot of slots) decoder.release(slot);
  return profile;
}

function printProfile(label: string, profile: LaunchProfile): void {
  console.log(
    `\n### ${label}: ${profile.launches} launches, ${profile.milliseconds.toFixed(2)} ms with events between`,
  );
  const top = profile.kernels.slice(0, 12);
  const table = markdownTable(
    ['kernel', 'launches', 'ms', 'share'],
    top.map((entry) => [
      entry.kernel,
      String(entry.launches),
      entry.milliseconds.toFixed(3),
      `${(100 * entry.share).toFixed(1)}%`,
    ]),
  );
  console.log(table.join('\n'));
}

if (process.env.DRAMA3_CODEC_BENCH === 'profile-only') {
  const decoder = CudaCodecDecoder.create(cuda, config, weights, {
    slots: 64,
    maxFramesPerCall: MAX_FRAMES_PER_CALL,
    precision: (process.env.DRAMA3_CODEC_PROFILE_PRECISION ?? 'f16') as CodecPrecision,
  });
  const warm = decoder.acquire();
  decoder.decode([{ slot: warm, frames: randomFrames(4) }]);
  decoder.release(warm);
  const slots = Array.from({ length: 64 }, () => decoder.acquire());
  decoder.decode(slots.map((slot) => ({ slot, frames: randomFrames(16) })));
  decoder.close();
  cuda.close();
  process.exit(0);
}

const blas = new CublasLt(cuda);
const ceiling = denseGemmRate(cuda, blas);
blas.destroy();
const rows: Row[] = [];
const profiles: Record<string, LaunchProfile> = {};
const firstFrames: Record<string, number> = {};
const servingRounds: Record<string, Record<number, number>> = {};
const memory: Record<string, unknown> = {};
for (const precision of benchPrecisions('DRAMA3_DECODE_PRECISIONS')) {
  const decoder = CudaCodecDecoder.create(cuda, config, weights, {
    slots: Math.max(...LANES),
    maxFramesPerCall: MAX_FRAMES_PER_CALL,
    precision,
  });
  try {
    memory[precision] = decoder.bytes;
    const warm = decoder.acquire();
    decoder.decode([{ slot: warm, frames: randomFrames(4) }]);
    decoder.release(warm);
    firstFrames[precision] = firstFrameMs(decoder);
    profiles[`${precision}, one frame`] = profileCall(decoder, 1, 1);
    profiles[`${precision}, 64 lanes × 16 frames`] = profileCall(decoder, 64, 16);
    profiles[`${precision}, 64 lanes × 1 frame (a serving round)`] = profileCall(decoder, 64, 1);
    servingRounds[precision] = Object.fromEntries(
      SERVING_FRAMES.map((frames) => [frames, servingRoundMs(decoder, 64, frames)]),
    );
    for (const lanes of LANES) {
      const row = streaming(decoder, precision, lanes);
      rows.push(row);
      console.log(`${precision} × ${lanes} lanes: ${row.audioSecondsPerSecond.toFixed(1)} audio-s/s`);
    }
  } finally {
    decoder.close();
  }
}

const perAudioSecond = (flopsPerFrame * framesPerSecond) / 1e9;
console.log(`\n## Codec decode on ${cuda.properties.name}, real geometry, synthetic weights`);
console.log(`${perAudioSecond.toFixed(1)} GFLOP per audio second; rounds of ${ROUNDS.join(', ')} frames per lane`);
console.log(
  `dense bf16 GEMM ${ceiling.size}³ through cuBLASLt in this run: ${ceiling.teraflops.toFixed(0)} TFLOP/s ` +
    `(${ceiling.milliseconds.toFixed(3)} ms)`,
);
const baselineFile = path.join(outputDirectory(), 'pytorch-codec.json');
const baseline = fs.existsSync(baselineFile)
  ? measuredCodecBaseline(JSON.parse(fs.readFileSync(baselineFile, 'utf8')))
  : PYTORCH_CODEC_BASELINE;
console.log(codecTable(rows, firstFrames, ceiling.teraflops, baseline).join('\n'));
for (const [precision, byFrames] of Object.entries(servingRounds)) {
  for (const [frames, ms] of Object.entries(byFrames)) {
    const rate = (64 * Number(frames)) / framesPerSecond / (ms / 1000);
    console.log(
      `${precision}, 64 lanes × ${frames} frame(s) a call (a serving round): ${ms.toFixed(2)} ms (median of ${SERVING_ROUNDS}), ${(ms / Number(frames)).toFixed(2)} ms a frame a lane, ${rate.toFixed(1)} audio-s/s`,
    );
  }
}
for (const [label, profile] of Object.entries(profiles)) printProfile(label, profile);
const file = writeReport('gpu-codec.json', {
  device: cuda.properties.name,
  gflopPerAudioSecond: perAudioSecond,
  denseGemm: ceiling,
  pytorch: baseline,
  rounds: ROUNDS,
  servingRoundMs: servingRounds,
  firstFrameMs: firstFrames,
  memory,
  rows,
  profiles,
});
console.log(`wrote ${file}`);
cuda.close();
