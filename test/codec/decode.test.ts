import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Codec } from '../../src/codec/codec.ts';
import { TINY_CODEC_CONFIG } from '../../src/codec/config.ts';
import {
  assertStagesMatch,
  FIXTURE_DIR,
  fixtureConfig,
  fixtureDoubles,
  fixtureFloats,
  fixtureFrames,
  stageRecorder,
  stageRelativeError,
} from './oracle-fixture.ts';

const codec = await Codec.load(FIXTURE_DIR, fixtureConfig);
const frames = fixtureFrames('decode.codes');

test('the fixture is the tiny codec', () => {
  assert.deepEqual(fixtureConfig, TINY_CODEC_CONFIG);
});

test('decode matches PyTorch fp32 stage by stage and within 1e-5 at the output', () => {
  const { stages, observer } = stageRecorder();
  const audio = codec.decode(frames, { observer });
  const names = assertStagesMatch(stages, 'decode.', ['decode.codes', 'decode.audio', 'decode.audio.f64']);
  assert.ok(names.length >= 10);
  const expected = fixtureFloats('decode.audio');
  assert.equal(audio.length, expected.length);
  const { relative, worst } = stageRelativeError(audio, audio.length, expected, 1, expected.length);
  assert.ok(relative <= 1e-5, `audio: relative error ${relative.toExponential(2)} at ${worst}`);
  const truth = stageRelativeError(audio, audio.length, fixtureDoubles('decode.audio.f64'), 1, expected.length);
  assert.ok(truth.relative <= 1e-5, `audio vs fp64: ${truth.relative.toExponential(2)} at ${truth.worst}`);
});
