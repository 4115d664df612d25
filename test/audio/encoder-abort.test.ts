// Aborting an encoder: every format refuses use afterwards and ignores a second abort or an abort after finish;
// the AAC encoder's worker drops the aborted job (its open-job count is read back from the worker itself).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAudioEncoder } from '../../src/audio/encoder.ts';
import { openAacJobs } from '../../src/audio/encoders/aac.ts';
import { AUDIO_FORMATS } from '../../src/audio/formats.ts';
import { isDramaError } from '../../src/errors.ts';
import { noise } from './signals.ts';

const RATE = 44100;

const refusedAfterEnd = (error: unknown) =>
  isDramaError(error) && error.code === 'AUDIO_ENCODER_FINISHED' && error.kind === 'internal';

describe('abort', () => {
  for (const format of AUDIO_FORMATS) {
    it(`${format}: push and finish are refused after abort; a second abort is a no-op`, async () => {
      const encoder = await createAudioEncoder(format, { sampleRate: RATE });
      encoder.push(noise(4096, 0.1));
      encoder.abort();
      encoder.abort();
      assert.throws(() => encoder.push(noise(16, 0.1)), refusedAfterEnd);
      assert.throws(() => encoder.finish(), refusedAfterEnd);
    });

    it(`${format}: abort after finish changes nothing`, async () => {
      const encoder = await createAudioEncoder(format, { sampleRate: RATE });
      encoder.push(noise(4096, 0.1));
      encoder.finish();
      encoder.abort();
      assert.throws(() => encoder.push(noise(16, 0.1)), refusedAfterEnd);
    });
  }

  it('an AAC encoder aborted mid-stream leaves no job open in its worker', async () => {
    const encoder = await createAudioEncoder('aac', { sampleRate: RATE });
    for (let piece = 0; piece < 4; piece++) encoder.push(noise(RATE / 4, 0.1));
    assert.equal(await openAacJobs(), 1, 'the unfinished encoder holds one job');
    encoder.abort();
    assert.equal(await openAacJobs(), 0);
  });

  it('an aborted AAC job does not disturb the next encoder in the same worker', async () => {
    const aborted = await createAudioEncoder('aac', { sampleRate: RATE });
    const finished = await createAudioEncoder('aac', { sampleRate: RATE });
    aborted.push(noise(RATE, 0.1));
    finished.push(noise(RATE, 0.1));
    aborted.abort();
    assert.ok(finished.finish().length > 1000, 'the other job still finalises its file');
    assert.equal(await openAacJobs(), 0);
  });
});

describe('many AAC encoders at once', () => {
  it('starting 24 at once adds no listener per encoder to the shared worker (no MaxListeners warning)', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const encoders = await Promise.all(
        Array.from({ length: 24 }, () => createAudioEncoder('aac', { sampleRate: RATE })),
      );
      for (const encoder of encoders) encoder.abort();
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(warnings, []);
      assert.equal(await openAacJobs(), 0);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
