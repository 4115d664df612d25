// Voice cloning's reference encode on CUDA, through the path uploads take: the voice encoder's own thread
// (encoder-thread.ts → encoder-worker.ts → upload-codec.ts) on the `small` synthetic checkpoint's codec, with the
// CUDA encoder in that thread's own context. An upload encoded there gives the frames of the same CUDA encoder run
// here on the same decoded samples (so the thread really encodes on CUDA), and over two passes the f32 encoder gives
// the cpu encoder's codes wherever the cpu's own margin is not a near-tie (as test/kernels/codec-encode-cuda.test.ts
// holds on the PyTorch fixture); the f16 (serving default) agreement is printed. Skips, saying why, without a CUDA
// device.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { decodeUpload } from '../../src/audio/decode.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import type { Codec } from '../../src/codec/codec.ts';
import { REFERENCE_FRAMES_PER_PASS } from '../../src/codec/cuda/encoder.ts';
import { loadCheckpointCodec } from '../../src/codec/reference.ts';
import type { Frame } from '../../src/model/types.ts';
import { type VoiceEncoder, voiceEncoderFor } from '../../src/voices/encoder.ts';
import { cudaReferenceFrames } from '../../src/voices/upload-codec.ts';
import { toneWav } from '../voices/wav-fixture.ts';
import { speechCheckpointDir } from './support/speech-model-checkpoint.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `needs a CUDA device: ${availability.reason}`;
/** A code may differ from the cpu's only where the cpu's two nearest entries are this close (as the fixture test). */
const MARGIN_BOUND = 1e-3;

let dir: string;
let codec: Codec;
const encoders: VoiceEncoder[] = [];

before(async () => {
  if (skip) return;
  dir = await speechCheckpointDir('small');
  codec = await loadCheckpointCodec(dir);
});
after(async () => {
  for (const encoder of encoders) await encoder.close();
});

function sameFrames(a: readonly Frame[], b: readonly Frame[], what: string): void {
  assert.equal(a.length, b.length, `${what}: frame counts`);
  for (const [index, frame] of a.entries()) assert.deepEqual([...frame], [...b[index]!], `${what}: frame ${index}`);
}

test('an upload encoded in the voice encoder thread on CUDA gives the CUDA encoder frames here', { skip }, async () => {
  const encoder = voiceEncoderFor({ kind: 'checkpoint', dir, device: { backend: 'cuda', precision: 'f16' } });
  encoders.push(encoder);
  const wav = toneWav(2.5, 24000, 230);
  const encoded = await encoder.encode(wav, 'A short transcript.');
  const decoded = await decodeUpload(wav);
  const here = cudaReferenceFrames(codec, 'f16');
  try {
    sameFrames(encoded.frames, here.frames(decoded.samples, decoded.sampleRate), 'thread vs here');
  } finally {
    here.close();
  }
  assert.ok(encoded.frames.length > 0);
  assert.equal(encoded.extension, 'wav');
});

/** A tone with a little noise at the codec's rate, `frames` frames long. */
function nativeReference(frames: number): Float32Array {
  let state = 0x1234567;
  const rate = codec.config.sampleRate;
  return Float32Array.from({ length: frames * codec.config.frameLength }, (_, index) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return 0.3 * Math.sin((2 * Math.PI * 180 * index) / rate) + 0.03 * (state / 2 ** 32 - 0.5);
  });
}

test('a reference of two passes: CUDA f32 gives the cpu codes but at near-ties; f16 agreement printed', {
  skip,
}, () => {
  const pcm = nativeReference(REFERENCE_FRAMES_PER_PASS + 37);
  let margins: Float64Array = new Float64Array(0);
  const expected = codec.encode(pcm, {
    margins: (values) => {
      margins = values;
    },
  });
  const codebooks = expected[0]!.length;
  const exact = cudaReferenceFrames(codec, 'f32');
  let excused = 0;
  try {
    const frames = exact.frames(pcm, codec.config.sampleRate);
    assert.equal(frames.length, expected.length);
    frames.forEach((frame, index) => {
      let differed = false;
      frame.forEach((code, k) => {
        if (code === expected[index]![k]) return;
        const margin = margins[index * codebooks + k]!;
        assert.ok(
          differed || margin < MARGIN_BOUND,
          `frame ${index} code ${k}: ${code} vs ${expected[index]![k]} (cpu margin ${margin})`,
        );
        differed = true;
        excused += 1;
      });
    });
  } finally {
    exact.close();
  }
  const half = cudaReferenceFrames(codec, 'f16');
  try {
    const frames = half.frames(pcm, codec.config.sampleRate);
    let equal = 0;
    for (const [index, frame] of frames.entries()) {
      for (const [k, code] of frame.entries()) if (code === expected[index]![k]) equal += 1;
    }
    const total = expected.length * codebooks;
    console.log(
      `reference of ${expected.length} frames: f32 ${total - excused} of ${total} codes equal the cpu's (the rest at near-ties); f16 ${equal} of ${total}`,
    );
  } finally {
    half.close();
  }
});
