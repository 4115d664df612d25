// decodeUpload: every bad upload gets its named error; good uploads in each format come back mono.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createOggEncoder } from 'wasm-media-encoders';
import { decodeUpload } from '../../src/audio/decode.ts';
import { createAudioEncoder } from '../../src/audio/encoder.ts';
import { UPLOAD_LIMITS } from '../../src/audio/limits.ts';
import { concatBytes } from '../../src/audio/pcm.ts';
import { writeWav } from '../../src/audio/wav.ts';
import { isDramaError } from '../../src/errors.ts';
import { alignedSnr, harmonicTone } from './signals.ts';
import { handmadeWav } from './wav-files.ts';

async function rejectsWith(bytes: Uint8Array, expected: string): Promise<void> {
  await assert.rejects(decodeUpload(bytes), (error) => {
    assert.ok(isDramaError(error), `not a DramaError: ${String(error)}`);
    assert.equal(error.code, expected, error.message);
    assert.equal(error.param, 'audio');
    return true;
  });
}

describe('decodeUpload refusals', () => {
  it('truncated WAV', () => rejectsWith(handmadeWav({ dataBytes: 200, declaredDataBytes: 20000 }), 'AUDIO_TRUNCATED'));
  it('WAV cut inside its header', () =>
    rejectsWith(writeWav(new Float32Array(100), 16000).subarray(0, 20), 'AUDIO_TRUNCATED'));
  it('wrong magic', () =>
    rejectsWith(new TextEncoder().encode('this is not audio at all, only text'), 'AUDIO_UNKNOWN_FORMAT'));
  it('0 samples', () => rejectsWith(handmadeWav({ dataBytes: 0 }), 'AUDIO_EMPTY'));
  it('0 bytes', () => rejectsWith(new Uint8Array(0), 'AUDIO_EMPTY'));
  it('8 channels', () => rejectsWith(handmadeWav({ channels: 8, dataBytes: 1600 }), 'AUDIO_TOO_MANY_CHANNELS'));
  it('1 Hz sample rate', () => rejectsWith(handmadeWav({ sampleRate: 1, dataBytes: 100 }), 'AUDIO_BAD_SAMPLE_RATE'));
  it('10-hour header', () =>
    rejectsWith(
      handmadeWav({ sampleRate: 44100, dataBytes: 100, declaredDataBytes: 10 * 3600 * 44100 * 2 }),
      'AUDIO_TOO_LONG',
    ));
  it('over the byte limit', async () => {
    await assert.rejects(
      decodeUpload(new Uint8Array(UPLOAD_LIMITS.maxBytes + 1)),
      (error) => isDramaError(error) && error.code === 'AUDIO_TOO_LARGE' && error.kind === 'too_large',
    );
  });
  it('an mp3 longer than the duration limit, stopped while decoding', async () => {
    const encoder = await createAudioEncoder('mp3', { sampleRate: 8000, bitrate: 8000 });
    const bytes = concatBytes([encoder.push(new Float32Array(8000 * 3)), encoder.finish()]);
    await assert.rejects(
      decodeUpload(bytes, { ...UPLOAD_LIMITS, maxDurationSeconds: 1 }),
      (error) => isDramaError(error) && error.code === 'AUDIO_TOO_LONG',
    );
  });
  it('a FLAC file cut short of its declared length', async () => {
    const encoder = await createAudioEncoder('flac', { sampleRate: 16000 });
    encoder.push(harmonicTone(16000, 1));
    const bytes = encoder.finish();
    await rejectsWith(bytes.subarray(0, Math.floor(bytes.length / 2)), 'AUDIO_TRUNCATED');
  });
});

describe('decodeUpload accepts', () => {
  it('stereo WAV, averaged to mono', async () => {
    const file = handmadeWav({ channels: 2, bits: 16, dataBytes: 8 });
    file.set([0x00, 0x40, 0x00, 0x00, 0x00, 0xc0, 0x00, 0xc0], 44); // (0.5, 0), (-0.5, -0.5)
    const decoded = await decodeUpload(file);
    assert.equal(decoded.sampleRate, 16000);
    assert.deepEqual([...decoded.samples], [0.25, -0.5]);
  });

  it('Ogg Vorbis (from the LAME package’s Vorbis encoder), stereo averaged to mono', async () => {
    const tone = harmonicTone(22050, 0.5);
    const vorbis = await createOggEncoder();
    vorbis.configure({ sampleRate: 22050, channels: 2, vbrQuality: 6 });
    const bytes = concatBytes([vorbis.encode([tone, tone]).slice(), vorbis.finalize().slice()]);
    const decoded = await decodeUpload(bytes);
    assert.equal(decoded.sampleRate, 22050);
    assert.ok(alignedSnr(tone, decoded.samples, 3000).snr > 15);
  });

  it('an mp3 behind an ID3v2 tag', async () => {
    const encoder = await createAudioEncoder('mp3', { sampleRate: 16000 });
    const mp3 = concatBytes([encoder.push(harmonicTone(16000, 0.5)), encoder.finish()]);
    const tag = new Uint8Array(10 + 100);
    tag.set(new TextEncoder().encode('ID3'), 0);
    tag[3] = 3;
    tag[9] = 100;
    const decoded = await decodeUpload(concatBytes([tag, mp3]));
    assert.equal(decoded.sampleRate, 16000);
    assert.ok(decoded.samples.length >= 8000);
  });

  for (const format of ['mp3', 'flac', 'opus', 'aac'] as const) {
    it(`${format} from our encoder, at its rate and close to the input`, async () => {
      const input = harmonicTone(24000, 0.5);
      const encoder = await createAudioEncoder(format, { sampleRate: 24000 });
      const decoded = await decodeUpload(concatBytes([encoder.push(input), encoder.finish()]));
      // Opus always decodes at 48 kHz; AAC at 24 kHz decodes at 48 kHz (implicit SBR signalling).
      const expectedRate = format === 'opus' || format === 'aac' ? 48000 : 24000;
      assert.equal(decoded.sampleRate, expectedRate);
      if (expectedRate === 24000) assert.ok(alignedSnr(input, decoded.samples, 3000).snr > 20);
    });
  }
});
