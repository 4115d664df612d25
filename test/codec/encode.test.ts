import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Codec } from '../../src/codec/codec.ts';
import {
  assertStagesMatch,
  FIXTURE_DIR,
  fixtureConfig,
  fixtureFloats,
  fixtureFrames,
  stageRecorder,
} from './oracle-fixture.ts';

const codec = await Codec.load(FIXTURE_DIR, fixtureConfig);

test('encode of 2 s gives the fixture codes exactly, each stage within 1e-5 of PyTorch fp32', () => {
  const { stages, observer } = stageRecorder();
  let margins: Float64Array | undefined;
  const frames = codec.encode(fixtureFloats('encode.audio'), {
    chunkFrames: Number.POSITIVE_INFINITY,
    observer,
    margins: (values) => {
      margins = values;
    },
  });
  assertStagesMatch(stages, 'encode.', ['encode.audio', 'encode.codes', 'encode.margins']);
  const expected = fixtureFrames('encode.codes');
  assert.equal(frames.length, expected.length);
  const differing: string[] = [];
  expected.forEach((frame, index) => {
    frame.forEach((code, codebook) => {
      if (frames[index]![codebook] !== code) {
        const margin = margins![index * frame.length + codebook]!;
        differing.push(
          `frame ${index} codebook ${codebook}: ${frames[index]![codebook]} vs ${code} (margin ${margin})`,
        );
      }
    });
  });
  assert.deepEqual(differing, []);
});

test('encode pads a partial tail frame and returns no frames for no audio', () => {
  assert.equal(codec.encode(new Float32Array(2049)).length, 2);
  assert.equal(codec.encode(new Float32Array(0)).length, 0);
});

test('encode in chunks of any size gives the frames and margins of one whole pass', () => {
  const audio = fixtureFloats('encode.audio');
  const run = (chunkFrames: number) => {
    let margins: Float64Array = new Float64Array(0);
    const frames = codec.encode(audio, {
      chunkFrames,
      margins: (values) => {
        margins = values;
      },
    });
    return { frames, margins };
  };
  const whole = run(Number.POSITIVE_INFINITY);
  for (const chunkFrames of [1, 3, 32]) {
    const chunked = run(chunkFrames);
    assert.deepEqual(chunked.frames, whole.frames, `chunks of ${chunkFrames}`);
    assert.deepEqual(chunked.margins, whole.margins, `chunks of ${chunkFrames}`);
  }
  assert.equal(whole.margins.length, 44 * 10);
  assert.ok(whole.margins.every((margin) => margin > 0));
});
