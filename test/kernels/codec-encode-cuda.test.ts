// The codec encode on CUDA (src/codec/cuda/encoder.ts) against the cpu encoder: on the PyTorch codec fixture
// (test/fixtures/codec) in fp32, every code equals the cpu's or differs only where the cpu's own margin (second-nearest
// minus nearest distance) is under MARGIN_BOUND, or later in a frame whose earlier code already differed, each
// difference listed; the margins agree within the same bound; passes of any length give the codes and margins of one
// pass bit for bit, over NaN-poisoned scratch. fp16-weights (the release's precision) is printed beside it. At the real
// geometry with synthetic weights: 5 s and 20 s references timed (median of 5, printed) and a 0.25 s slice compared with
// the cpu encoder. Skips, saying why, where there is no CUDA device.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, test } from 'node:test';
import { CudaContext } from '../../src/backend/cuda/context.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import type { CodecPrecision } from '../../src/backend/cuda/ops/codecConv.ts';
import { readTorchCheckpoint } from '../../src/checkpoint/torch-pth.ts';
import { Codec } from '../../src/codec/codec.ts';
import { type CodecConfig, REAL_CODEC_CONFIG } from '../../src/codec/config.ts';
import { CudaCodecEncoder, type CudaEncoding } from '../../src/codec/cuda/encoder.ts';
import { synthesizeCodecWeights } from '../../src/codec/synth-weights.ts';
import { type CodecWeights, loadCodecWeights } from '../../src/codec/weights.ts';
import { FIXTURE_DIR, fixtureConfig, fixtureFloats, fixtureFrames } from '../codec/oracle-fixture.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `no CUDA device: ${availability.reason}`;

/**
 * A code may differ from the cpu's only where the cpu's two nearest entries are closer than this (squared distance
 * between unit vectors, range [0, 4]): the fp32 convs' sums differ from the cpu's fp64 ones by about 1e-6 relative,
 * which moves a distance by about 1e-5, so this leaves a hundredfold margin and still refuses any real disagreement.
 */
const MARGIN_BOUND = 1e-3;
const TIMING_RUNS = 5;

let cuda: CudaContext;
let weights: CodecWeights;
let cpu: Codec;

before(async () => {
  if (skip) return;
  cuda = new CudaContext();
  const state = await readTorchCheckpoint(join(FIXTURE_DIR, 'codec.pth'));
  weights = loadCodecWeights(state, fixtureConfig, 'test/fixtures/codec/codec.pth');
  cpu = Codec.fromWeights(fixtureConfig, state);
});
after(() => {
  if (!skip) cuda.close();
});

function encoder(config: CodecConfig, from: CodecWeights, precision: CodecPrecision, framesPerPass: number) {
  return CudaCodecEncoder.create(cuda, config, from, { framesPerPass, precision, poisonScratch: true });
}

function cpuEncode(codec: Codec, pcm: Float32Array): CudaEncoding {
  let margins: Float64Array = new Float64Array(0);
  const frames = codec.encode(pcm, {
    chunkFrames: Number.POSITIVE_INFINITY,
    margins: (values) => {
      margins = values;
    },
  });
  return { frames, margins };
}

interface Comparison {
  /** Differences the margin rule allows, one line each. */
  readonly allowed: string[];
  /** Differences it does not. */
  readonly refused: string[];
  /** The largest |margin difference| where the frame's codes agree so far. */
  readonly worstMargin: number;
}

/** CUDA's codes and margins beside the cpu's, frame by frame and codebook by codebook. */
function compare(actual: CudaEncoding, expected: CudaEncoding): Comparison {
  assert.equal(actual.frames.length, expected.frames.length, 'frame count');
  const allowed: string[] = [];
  const refused: string[] = [];
  let worstMargin = 0;
  expected.frames.forEach((frame, index) => {
    let differed = false;
    frame.forEach((code, codebook) => {
      const at = index * frame.length + codebook;
      const margin = expected.margins[at]!;
      const got = actual.frames[index]![codebook]!;
      if (got === code) {
        if (!differed) worstMargin = Math.max(worstMargin, Math.abs(actual.margins[at]! - margin));
        return;
      }
      const line = `frame ${index} codebook ${codebook}: ${got} vs cpu ${code} (cpu margin ${margin.toExponential(2)})`;
      if (differed) allowed.push(`${line}, after an earlier difference in the frame`);
      else if (margin < MARGIN_BOUND) allowed.push(line);
      else refused.push(line);
      differed = true;
    });
  });
  return { allowed, refused, worstMargin };
}

function report(label: string, comparison: Comparison, codes: number): void {
  const { allowed, refused, worstMargin } = comparison;
  console.log(
    `${label}: ${codes - allowed.length - refused.length}/${codes} codes equal the cpu's, ${allowed.length} ` +
      `allowed differences, ${refused.length} refused; worst margin difference ${worstMargin.toExponential(2)}`,
  );
  for (const line of [...allowed, ...refused].slice(0, 20)) console.log(`  ${line}`);
}

function sameBits(a: CudaEncoding, b: CudaEncoding): boolean {
  const codes = (encoding: CudaEncoding) => encoding.frames.map((frame) => [...frame]);
  return (
    JSON.stringify(codes(a)) === JSON.stringify(codes(b)) &&
    Buffer.compare(Buffer.from(a.margins.buffer), Buffer.from(b.margins.buffer)) === 0
  );
}

test('the CUDA encoder gives the cpu encoder’s codes on the PyTorch fixture (fp32), margins within the bound', {
  skip,
}, () => {
  const audio = fixtureFloats('encode.audio');
  const expected = cpuEncode(cpu, audio);
  const codec = encoder(fixtureConfig, weights, 'f32', 64);
  try {
    const actual = codec.encode(audio);
    assert.ok(actual.margins.every(Number.isFinite), 'a margin is not finite');
    const comparison = compare(actual, expected);
    report('fixture, fp32', comparison, expected.margins.length);
    const pytorch = fixtureFrames('encode.codes');
    const equalToPytorch = pytorch.flatMap((frame, index) =>
      [...frame].filter((code, codebook) => actual.frames[index]![codebook] === code),
    ).length;
    console.log(`fixture, fp32: ${equalToPytorch}/${expected.margins.length} codes equal PyTorch's`);
    assert.deepEqual(comparison.refused, []);
    assert.ok(comparison.worstMargin < MARGIN_BOUND, `margin difference ${comparison.worstMargin}`);
  } finally {
    codec.close();
  }
});

test('the CUDA encoder in passes of 1, 5 and 16 frames gives one pass’s codes and margins, bit for bit', {
  skip,
}, () => {
  const audio = fixtureFloats('encode.audio');
  const encodings = [64, 1, 5, 16].map((framesPerPass) => {
    const codec = encoder(fixtureConfig, weights, 'f32', framesPerPass);
    try {
      return codec.encode(audio);
    } finally {
      codec.close();
    }
  });
  const [whole, ...passes] = encodings;
  passes.forEach((encoding, index) => {
    assert.ok(sameBits(encoding, whole!), `passes of ${[1, 5, 16][index]} frames differ from one pass`);
  });
  const again = encoder(fixtureConfig, weights, 'f32', 64);
  try {
    again.encode(audio.subarray(0, 5000));
    assert.ok(sameBits(again.encode(audio), whole!), 'a second encode on one encoder starts from fresh state');
  } finally {
    again.close();
  }
});

test('the CUDA encoder with fp16 weights (printed), and its refusals', { skip }, () => {
  const audio = fixtureFloats('encode.audio');
  const codec = encoder(fixtureConfig, weights, 'f16-weights', 64);
  try {
    const actual = codec.encode(audio);
    report('fixture, fp16 weights', compare(actual, cpuEncode(cpu, audio)), actual.margins.length);
    assert.equal(codec.encode(new Float32Array(0)).frames.length, 0);
    assert.equal(codec.encode(new Float32Array(2049)).frames.length, 2);
  } finally {
    codec.close();
  }
  assert.throws(() => codec.encode(audio), { code: 'CODEC_CLOSED' });
  assert.throws(() => encoder(fixtureConfig, weights, 'f32', 0), { code: 'CODEC_PASS_FRAMES_INVALID' });
});

/** Deterministic test audio: three drifting tones and a little noise, amplitude about 0.3. */
function referenceAudio(seconds: number, sampleRate: number): Float32Array {
  let state = 0x2545f491;
  return Float32Array.from({ length: Math.round(seconds * sampleRate) }, (_, index) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    const time = index / sampleRate;
    const tones = Math.sin(2 * Math.PI * 220 * time) + 0.5 * Math.sin(2 * Math.PI * (330 + 40 * time) * time);
    return 0.2 * tones + 0.05 * Math.sin(2 * Math.PI * 1250 * time) + 0.02 * (state / 2 ** 32 - 0.5);
  });
}

test('real geometry, synthetic weights: 5 s and 20 s references timed, and 0.25 s against the cpu encoder', {
  skip,
}, () => {
  const config = REAL_CODEC_CONFIG;
  const state = synthesizeCodecWeights(config, 20261201);
  const real = loadCodecWeights(state, config, 'synthetic codec');
  for (const precision of ['f16', 'f16-weights', 'f32'] as const) {
    const codec = encoder(config, real, precision, 512);
    try {
      codec.encode(referenceAudio(0.5, config.sampleRate));
      for (const seconds of [5, 20]) {
        const audio = referenceAudio(seconds, config.sampleRate);
        const times: number[] = [];
        for (let run = 0; run < TIMING_RUNS; run++) {
          const started = performance.now();
          codec.encode(audio);
          times.push(performance.now() - started);
        }
        const median = times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
        console.log(
          `real geometry, ${precision}: ${seconds} s reference encoded in ${median.toFixed(1)} ms ` +
            `(median of ${TIMING_RUNS}; ${((seconds * 1000) / median).toFixed(0)}× real time)`,
        );
      }
    } finally {
      codec.close();
    }
  }
  // A short slice: the cpu encoder at the real geometry takes minutes a second of audio.
  const slice = referenceAudio(0.25, config.sampleRate);
  const codec = encoder(config, real, 'f32', 256);
  try {
    const actual = codec.encode(slice);
    const comparison = compare(actual, cpuEncode(Codec.fromWeights(config, state), slice));
    report('real geometry, 0.25 s, fp32', comparison, actual.margins.length);
    assert.deepEqual(comparison.refused, []);
  } finally {
    codec.close();
  }
});
