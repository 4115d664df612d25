// The codec decode on CUDA (src/codec/cuda/) end to end on the PyTorch codec fixture (test/fixtures/codec, written by
// tools/oracle/codec.py): its SNR against PyTorch fp32 and fp64 and against the cpu codec, in fp32 and fp16-weights
// modes (printed; fp32 held to 100 dB against PyTorch fp32), and contract 5 on CUDA: 8 lanes with different chunk
// schedules decoded together give, bit for bit, the samples of each lane decoded whole alone, over NaN-poisoned
// scratch and with calls split at a frame budget. Skips, saying why, where there is no CUDA device.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { bytesDigest } from '../../bench/support/digest.ts';
import { CudaContext } from '../../src/backend/cuda/context.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import type { CodecPrecision } from '../../src/backend/cuda/ops/codecConv.ts';
import { readTorchCheckpoint } from '../../src/checkpoint/torch-pth.ts';
import { Codec } from '../../src/codec/codec.ts';
import { CudaCodecDecoder, type LaneFrames } from '../../src/codec/cuda/decoder.ts';
import { decoderDeviceBytes } from '../../src/codec/cuda/device-bytes.ts';
import { type CodecWeights, loadCodecWeights } from '../../src/codec/weights.ts';
import type { Frame } from '../../src/model/types.ts';
import { FIXTURE_DIR, fixtureConfig, fixtureDoubles, fixtureFloats, fixtureFrames } from '../codec/oracle-fixture.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `no CUDA device: ${availability.reason}`;
const FP32_SNR_DB = 100;

const frames = fixtureFrames('decode.codes');
let cuda: CudaContext;
let weights: CodecWeights;

before(async () => {
  if (skip) return;
  cuda = new CudaContext();
  const state = await readTorchCheckpoint(join(FIXTURE_DIR, 'codec.pth'));
  weights = loadCodecWeights(state, fixtureConfig, 'test/fixtures/codec/codec.pth');
});
after(() => {
  if (!skip) cuda.close();
});

/** 10·log10(Σ reference² / Σ (x − reference)²); Infinity when equal. */
function snr(x: Float32Array, reference: ArrayLike<number>): number {
  assert.equal(x.length, reference.length);
  let signal = 0;
  let noise = 0;
  for (let index = 0; index < x.length; index++) {
    signal += reference[index]! ** 2;
    noise += (x[index]! - reference[index]!) ** 2;
  }
  return 10 * Math.log10(signal / noise);
}

function decoder(precision: CodecPrecision, slots: number, maxFramesPerCall: number): CudaCodecDecoder {
  return CudaCodecDecoder.create(cuda, fixtureConfig, weights, {
    slots,
    maxFramesPerCall,
    precision,
    poisonScratch: true,
  });
}

test('the CUDA codec decodes the PyTorch fixture: SNR in the f32, f16-weights and f16 (tensor-core) modes', {
  skip,
}, async () => {
  const cpu = (await Codec.load(FIXTURE_DIR, fixtureConfig)).decode(frames);
  const pytorch = fixtureFloats('decode.audio');
  const exact = fixtureDoubles('decode.audio.f64');
  for (const precision of ['f32', 'f16-weights', 'f16'] as const) {
    const codec = decoder(precision, 1, 64);
    try {
      // What the lane budget sets aside for the codec (device-bytes.ts) is what the decoder allocated.
      const sized = decoderDeviceBytes(fixtureConfig, weights, { slots: 1, maxFramesPerCall: 64, precision });
      assert.equal(sized.weights, codec.bytes.weights, `${precision}: sized weight bytes`);
      assert.equal(sized.scratch, codec.bytes.scratch, `${precision}: sized scratch bytes`);
      const stream = codec.openStream();
      const audio = stream.push(frames);
      assert.ok(audio.every(Number.isFinite), `${precision}: a sample is not finite`);
      const figures = {
        pytorchFp32: snr(audio, pytorch),
        pytorchFp64: snr(audio, exact),
        cpu: snr(audio, cpu),
      };
      console.log(
        `codec on CUDA, ${precision}: SNR ${figures.pytorchFp32.toFixed(1)} dB vs PyTorch fp32, ` +
          `${figures.pytorchFp64.toFixed(1)} dB vs PyTorch fp64, ${figures.cpu.toFixed(1)} dB vs the cpu codec ` +
          `(${frames.length} frames; samples digest ${bytesDigest(audio)})`,
      );
      if (precision === 'f32') {
        assert.ok(figures.pytorchFp32 >= FP32_SNR_DB, `fp32 SNR ${figures.pytorchFp32.toFixed(1)} dB < ${FP32_SNR_DB}`);
      }
    } finally {
      codec.close();
    }
  }
});

/** The fixture's frames rotated by `shift`: a different sequence for each lane. */
function laneFrames(shift: number): Frame[] {
  return [...frames.slice(shift), ...frames.slice(0, shift)];
}

const SCHEDULES: readonly (readonly number[])[] = [
  [1],
  [4],
  [32],
  [3, 1, 7, 2, 13, 5],
  [40],
  [2, 9],
  [16],
  [5, 1, 1, 11],
];

for (const precision of ['f32', 'f16'] as const) {
  test(`contract 5 on CUDA, ${precision}: 8 lanes with different chunk schedules together = each whole alone, bit for bit`, {
    skip,
  }, () => {
    const alone = decoder(precision, 1, 64);
    let wholes: Float32Array[];
    try {
      wholes = SCHEDULES.map((_, lane) => {
        const slot = alone.acquire();
        const [samples] = alone.decode([{ slot, frames: laneFrames(3 * lane) }]);
        alone.release(slot);
        return samples!;
      });
    } finally {
      alone.close();
    }
    // Calls of at most 24 frames: the rounds where many lanes bring many frames are split too.
    const codec = decoder(precision, SCHEDULES.length, 24);
    try {
      const slots = SCHEDULES.map(() => codec.acquire());
      const streamed = SCHEDULES.map(() => [] as Float32Array[]);
      const done = SCHEDULES.map(() => 0);
      for (let round = 0; done.some((count) => count < frames.length); round++) {
        const call: LaneFrames[] = [];
        const lanes: number[] = [];
        SCHEDULES.forEach((schedule, lane) => {
          if (done[lane]! >= frames.length) return;
          const size = Math.min(schedule[round % schedule.length]!, frames.length - done[lane]!);
          call.push({ slot: slots[lane]!, frames: laneFrames(3 * lane).slice(done[lane]!, done[lane]! + size) });
          lanes.push(lane);
          done[lane]! += size;
        });
        codec.decode(call).forEach((samples, index) => {
          streamed[lanes[index]!]!.push(samples);
        });
      }
      SCHEDULES.forEach((schedule, lane) => {
        const joined = new Float32Array(wholes[lane]!.length);
        let offset = 0;
        for (const part of streamed[lane]!) {
          joined.set(part, offset);
          offset += part.length;
        }
        const whole = new Uint32Array(wholes[lane]!.buffer);
        const bits = new Uint32Array(joined.buffer);
        const first = bits.findIndex((word, index) => word !== whole[index]);
        assert.equal(first, -1, `lane ${lane} (chunks ${schedule.join(', ')}): sample ${first} differs from whole`);
      });
    } finally {
      codec.close();
    }
  });
}

test('the CUDA codec refuses a slot twice in one call and a call when every slot streams', { skip }, () => {
  const codec = decoder('f32', 1, 8);
  try {
    const slot = codec.acquire();
    const one = frames.slice(0, 1);
    assert.throws(
      () =>
        codec.decode([
          { slot, frames: one },
          { slot, frames: one },
        ]),
      { code: 'CODEC_SLOT_TWICE' },
    );
    assert.throws(() => codec.acquire(), { code: 'CODEC_SLOTS_EXHAUSTED' });
    assert.throws(() => codec.decode([{ slot: 0, frames: [new Int32Array(3)] }]), { code: 'CODEC_FRAME_SIZE' });
    assert.equal(codec.decode([{ slot, frames: one }])[0]!.length, fixtureConfig.frameLength);
  } finally {
    codec.close();
  }
});
