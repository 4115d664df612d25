import assert from 'node:assert/strict';
import { test } from 'node:test';
import { concatSamples } from '../../src/audio/pcm.ts';
import { Codec } from '../../src/codec/codec.ts';
import { TINY_CODEC_CONFIG } from '../../src/codec/config.ts';
import { synthesizeCodecWeights } from '../../src/codec/synth-weights.ts';
import { DramaError } from '../../src/errors.ts';
import type { Frame } from '../../src/model/types.ts';
import { FIXTURE_DIR, fixtureConfig, fixtureFrames } from './oracle-fixture.ts';

function firstMismatch(actual: Float32Array, expected: Float32Array): string | undefined {
  if (actual.length !== expected.length) return `length ${actual.length} vs ${expected.length}`;
  for (let index = 0; index < actual.length; index++) {
    if (!Object.is(actual[index], expected[index])) return `sample ${index}: ${actual[index]} vs ${expected[index]}`;
  }
  return undefined;
}

function streamInChunks(codec: Codec, frames: readonly Frame[], sizes: readonly number[]): Float32Array {
  const stream = codec.openStream({ poisonScratch: true });
  const parts: Float32Array[] = [];
  let next = 0;
  for (const size of sizes) {
    const chunk = frames.slice(next, next + size);
    next += size;
    const samples = stream.push(chunk);
    assert.equal(samples.length, chunk.length * codec.config.frameLength);
    parts.push(samples);
  }
  assert.equal(next, frames.length);
  return concatSamples(parts);
}

const fixtureCodec = await Codec.load(FIXTURE_DIR, fixtureConfig);
const frames = fixtureFrames('decode.codes');

test('streamed decode over NaN-poisoned scratch equals one whole decode bit for bit', () => {
  const whole = fixtureCodec.decode(frames);
  // 1, then 4, then irregular sizes; 30 frames pass the 16-frame attention window, the last 10 go in one push.
  const streamed = streamInChunks(fixtureCodec, frames, [1, 4, 3, 5, 16, 1, 10]);
  assert.equal(firstMismatch(streamed, whole), undefined);
  assert.ok(whole.every(Number.isFinite));
});

test('an empty push returns no samples and changes nothing', () => {
  const whole = fixtureCodec.decode(frames.slice(0, 6));
  const streamed = streamInChunks(fixtureCodec, frames.slice(0, 6), [0, 2, 0, 4]);
  assert.equal(firstMismatch(streamed, whole), undefined);
});

test('a stream decodes the same samples one frame at a time on synthetic weights', () => {
  const codec = Codec.fromWeights(TINY_CODEC_CONFIG, synthesizeCodecWeights(TINY_CODEC_CONFIG, 3));
  const longFrames = Array.from({ length: 24 }, (_, index) =>
    Int32Array.from({ length: 10 }, (_, codebook) => (index * 131 + codebook * 17) % (codebook === 0 ? 4096 : 1024)),
  );
  const whole = codec.decode(longFrames);
  assert.equal(firstMismatch(streamInChunks(codec, longFrames, Array(24).fill(1)), whole), undefined);
  // A different chunking of different codes must differ: the comparison can fail.
  const other = longFrames.map((frame) => frame.map((code) => (code + 1) % 1024));
  assert.notEqual(firstMismatch(streamInChunks(codec, other, [24]), whole), undefined);
});

test('out-of-range codes decode as their clamped codes', () => {
  const base = frames.slice(0, 3).map((frame) => frame.slice());
  const wild = base.map((frame) => frame.slice());
  wild[0]![0] = 99999;
  wild[1]![4] = -5;
  wild[2]![9] = 1024;
  const clamped = base.map((frame) => frame.slice());
  clamped[0]![0] = 4095;
  clamped[1]![4] = 0;
  clamped[2]![9] = 1023;
  assert.equal(firstMismatch(fixtureCodec.decode(wild), fixtureCodec.decode(clamped)), undefined);
  assert.notEqual(firstMismatch(fixtureCodec.decode(wild), fixtureCodec.decode(base)), undefined);
});

test('a frame with the wrong number of codes is refused by its index', () => {
  const short = [frames[0]!, frames[1]!.subarray(0, 9)];
  assert.throws(
    () => fixtureCodec.decode(short),
    (error: unknown) => {
      assert.ok(error instanceof DramaError);
      assert.equal(error.code, 'CODEC_FRAME_SIZE');
      assert.match(error.message, /frame 1 has 9 codes; the codec takes 10/);
      return true;
    },
  );
});
