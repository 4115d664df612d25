// The duration limit holds on decoded samples while decoding: a small file that expands to hours (FLAC silence) is
// stopped a few seconds past the limit, and a corrupt file's decoder chatter becomes one named error, not stderr.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BitWriter } from '../../src/audio/bit-writer.ts';
import { decodeUpload } from '../../src/audio/decode.ts';
import { createAudioEncoder } from '../../src/audio/encoder.ts';
import { writeFlacFrame } from '../../src/audio/flac-frame.ts';
import { UPLOAD_LIMITS } from '../../src/audio/limits.ts';
import { concatBytes } from '../../src/audio/pcm.ts';
import { isDramaError } from '../../src/errors.ts';

const BLOCK = 4096;

/** A mono 16-bit FLAC file of `seconds` of silence: every frame one constant subframe, a few bytes each. */
function silentFlac(seconds: number, sampleRate: number): Uint8Array {
  const total = seconds * sampleRate;
  const writer = new BitWriter();
  writer.write(0x664c6143, 32); // "fLaC"
  writer.write(1, 1); // last metadata block
  writer.write(0, 7); // STREAMINFO
  writer.write(34, 24);
  writer.write(BLOCK, 16);
  writer.write(BLOCK, 16);
  writer.write(0, 24);
  writer.write(0, 24);
  writer.write(sampleRate, 20);
  writer.write(0, 3);
  writer.write(15, 5);
  writer.write(Math.floor(total / 2 ** 32), 4);
  writer.write(total % 2 ** 32, 32);
  for (let byte = 0; byte < 16; byte++) writer.write(0, 8);
  const silence = new Int32Array(BLOCK);
  for (let frame = 0; frame * BLOCK < total; frame++) writeFlacFrame(writer, silence, frame, BLOCK, sampleRate);
  return writer.view();
}

test('an hour of FLAC silence in a small file stops within seconds of the limit, not after an hour', async () => {
  const file = silentFlac(3600, 8000);
  assert.ok(file.length < 150_000, `${file.length} bytes`);
  const limits = { ...UPLOAD_LIMITS, maxDurationSeconds: 10 };
  await assert.rejects(decodeUpload(file, limits), (error) => {
    assert.ok(isDramaError(error) && error.code === 'AUDIO_TOO_LONG', String(error));
    const decoded = Number(/\(([\d.]+) s decoded so far\)/.exec(error.message)?.[1]);
    // One input chunk of this file holds about 11 s of silence: the decode stops within a chunk of the limit.
    assert.ok(decoded <= 10 + 20, `decoded ${decoded} s before stopping`);
    return true;
  });
});

test('a corrupt mp3 is one named error, and the decoder prints nothing', async () => {
  const encoder = await createAudioEncoder('mp3', { sampleRate: 24000 });
  const tone = Float32Array.from({ length: 24000 * 5 }, (_, index) => 0.3 * Math.sin(index / 10));
  const bytes = concatBytes([encoder.push(tone), encoder.finish()]);
  let state = 1;
  for (let index = 200; index < bytes.length; index++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    bytes[index] = state >>> 24;
  }
  const printed: string[] = [];
  const saved = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array) => printed.push(String(chunk)) > 0) as typeof saved;
  try {
    await assert.rejects(decodeUpload(bytes), (error) => isDramaError(error) && error.code === 'AUDIO_CORRUPT');
  } finally {
    process.stderr.write = saved;
  }
  assert.deepEqual(printed, []);
});

test('a long FLAC fed in runs of whole frames decodes to every one of its samples', async () => {
  const rate = 44100;
  const tone = Float32Array.from(
    { length: rate * 20 },
    (_, index) => 0.3 * Math.sin(index / 7) * Math.sin(index / 5000),
  );
  const encoder = await createAudioEncoder('flac', { sampleRate: rate });
  encoder.push(tone);
  const decoded = await decodeUpload(encoder.finish());
  assert.equal(decoded.samples.length, tone.length);
});
