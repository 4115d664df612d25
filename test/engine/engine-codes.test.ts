// The engine refuses, by name, a frame whose code lies outside its codebook before the codec (which clamps, as the
// reference vocoder does) can turn a sampler defect into plausible audio; the request with the bad frame fails and
// the next one decodes as usual.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TINY_CODEC_CONFIG } from '../../src/codec/config.ts';
import { checkEngineCodes, checkedStream } from '../../src/engine/engine-codes.ts';
import { InlineFrameDecoder } from '../../src/engine/frame-decoder.ts';
import { loadEngineCodec, loadRuntime } from '../../src/engine/load-runtime.ts';
import type { EngineEvent } from '../../src/engine/protocol.ts';
import type { Frame } from '../../src/model/types.ts';
import { CODES_PER_FRAME } from '../../src/shared/frame.ts';
import { tinyCheckpointDir } from '../model/tiny-checkpoint.ts';

const config = TINY_CODEC_CONFIG;

function frame(codes: Partial<Record<number, number>> = {}): Frame {
  const values = new Int32Array(CODES_PER_FRAME);
  for (const [codebook, code] of Object.entries(codes)) values[Number(codebook)] = code!;
  return values;
}

test('codes at the edges of their codebooks pass; one past either edge is refused by name', () => {
  const last = config.residualCodebookSize - 1;
  checkEngineCodes([frame({ 0: config.semanticCodebookSize - 1, 1: last, [CODES_PER_FRAME - 1]: last })], config);
  const refused = (frames: Frame[], pattern: RegExp) =>
    assert.throws(() => checkEngineCodes(frames, config), { code: 'ENGINE_CODE_OUT_OF_RANGE', message: pattern });
  refused([frame({ 0: config.semanticCodebookSize })], /code 4096 for codebook 0 in frame 0/);
  refused([frame(), frame({ 3: config.residualCodebookSize })], /code 1024 for codebook 3 in frame 1/);
  refused([frame({ 5: -1 })], /code -1 for codebook 5/);
});

test('the checked stream never hands the codec a refused frame', () => {
  const pushed: number[] = [];
  const inner = {
    push(frames: readonly Frame[]) {
      pushed.push(frames.length);
      return new Float32Array(0);
    },
  };
  const stream = checkedStream(inner, config);
  stream.push([frame(), frame()]);
  assert.throws(() => stream.push([frame({ 0: -3 })]), { code: 'ENGINE_CODE_OUT_OF_RANGE' });
  assert.deepEqual(pushed, [2]);
});

test('through the decoder: the request with the bad frame fails with that code, the next one is served', () => {
  const events: EngineEvent[] = [];
  const codec = {
    sampleRate: config.sampleRate,
    frameLength: config.frameLength,
    openStream: () => checkedStream({ push: (frames) => new Float32Array(frames.length * 4) }, config),
  };
  const decoder = new InlineFrameDecoder(codec, (event) => events.push(event));
  const usage = { inputTokens: 3, outputFrames: 1 };
  decoder.open(1);
  decoder.decode(1, [frame({ 2: config.residualCodebookSize })]);
  decoder.end({ type: 'finished', id: 1, reason: 'stop', usage });
  decoder.open(2);
  decoder.decode(2, [frame({ 0: 7 })]);
  decoder.end({ type: 'finished', id: 2, reason: 'stop', usage });
  assert.deepEqual(
    events.map((event) => [event.type, 'id' in event ? event.id : -1]),
    [
      ['failed', 1],
      ['audio', 2],
      ['finished', 2],
    ],
  );
  const failed = events[0] as Extract<EngineEvent, { type: 'failed' }>;
  assert.equal(failed.error.code, 'ENGINE_CODE_OUT_OF_RANGE');
});

test("both codecs the engine loads from a checkpoint (its own and the decode thread's) refuse the bad frame", async () => {
  const spec = { kind: 'checkpoint', dir: await tinyCheckpointDir(), backend: 'cpu' } as const;
  const codecs = [(await loadRuntime(spec)).codec, await loadEngineCodec(spec)];
  for (const codec of codecs) {
    const stream = codec.openStream();
    assert.equal(stream.push([frame({ 0: 11 })]).length, codec.frameLength);
    assert.throws(() => stream.push([frame({ 0: config.semanticCodebookSize })]), { code: 'ENGINE_CODE_OUT_OF_RANGE' });
  }
});
