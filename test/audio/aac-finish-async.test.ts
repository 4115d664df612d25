// The AAC encoder's awaited finish (the server's way) gives the very bytes of its blocking finish, keeps the calling
// thread's event loop turning while the worker finalises, and frees the worker's job like any finish.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createAudioEncoder } from '../../src/audio/encoder.ts';
import { openAacJobs } from '../../src/audio/encoders/aac.ts';
import { isDramaError } from '../../src/errors.ts';
import { noise } from './signals.ts';

const RATE = 44100;

test('finishAsync and finish give the same AAC file', async () => {
  const signal = noise(RATE, 0.2);
  const blocking = await createAudioEncoder('aac', { sampleRate: RATE });
  const awaited = await createAudioEncoder('aac', { sampleRate: RATE });
  blocking.push(signal);
  awaited.push(signal);
  let turns = 0;
  const ticker = setInterval(() => {
    turns += 1;
  }, 0);
  const pending = awaited.finishAsync();
  const bytes = await pending;
  clearInterval(ticker);
  assert.ok(turns > 0, 'the event loop stood still while the worker finalised');
  assert.ok(bytes.length > 1000);
  assert.deepEqual(Buffer.from(bytes), Buffer.from(blocking.finish()));
  assert.equal(await openAacJobs(), 0);
});

test('an encoder finished the awaited way refuses a second finish', async () => {
  const encoder = await createAudioEncoder('aac', { sampleRate: RATE });
  encoder.push(noise(4096, 0.1));
  await encoder.finishAsync();
  await assert.rejects(
    encoder.finishAsync(),
    (error) => isDramaError(error) && error.code === 'AUDIO_ENCODER_FINISHED',
  );
  assert.throws(
    () => encoder.finish(),
    (error) => isDramaError(error) && error.code === 'AUDIO_ENCODER_FINISHED',
  );
});
