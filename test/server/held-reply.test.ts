// Replies that are not streamed are held until their end, so they are bounded: past the bound the request is
// cancelled and refused with 413 REPLY_TOO_LARGE_TO_HOLD, naming how to get the audio (stream it); the same audio
// streamed is served whole, and the lane is free for the next request.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestServer } from './support.ts';

const HELD_LIMIT = 100_000;

function speech(maxFrames: number, streamFormat?: 'audio') {
  return {
    method: 'POST' as const,
    url: '/v1/audio/speech',
    payload: {
      input: 'hello',
      response_format: 'pcm',
      sample_rate: 44100,
      max_frames: maxFrames,
      ...(streamFormat === undefined ? {} : { stream_format: streamFormat }),
    },
  };
}

test('a whole reply past the held bound is refused with 413 and cancelled; streamed, the same audio is served', async () => {
  const server = await startTestServer({ app: { maxHeldReplyBytes: HELD_LIMIT }, model: { framesPerRow: 100 } });
  try {
    // 20 frames of 16-bit PCM are 81920 bytes, within the bound.
    const within = await server.app.inject(speech(20));
    assert.equal(within.statusCode, 200, within.body);
    assert.equal(within.rawPayload.length, 20 * 2048 * 2);
    // 40 frames would be 163840 bytes: refused once the held bytes pass 100000.
    const over = await server.app.inject(speech(40));
    assert.equal(over.statusCode, 413, over.body);
    const { error } = over.json();
    assert.equal(error.code, 'REPLY_TOO_LARGE_TO_HOLD');
    assert.equal(error.param, 'max_frames');
    assert.match(
      error.message,
      /^a pcm reply held until its end reached 1\d{5} bytes after \d+ frames, over the limit of 100000: stream it/,
    );
    const streamed = await server.app.inject(speech(40, 'audio'));
    assert.equal(streamed.statusCode, 200);
    assert.equal(streamed.rawPayload.length, 40 * 2048 * 2);
    for (let waited = 0; server.engine.stats.lanesBusy > 0 && waited < 2000; waited += 10) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(server.engine.stats.lanesBusy, 0, 'the refused request left no lane busy');
  } finally {
    await server.close();
  }
});
