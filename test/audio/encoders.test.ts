// Every encoder's output, decoded by audio-decode (an independent decoder), against the input.
// SNR is measured after the codec's delay and the decoder's gain convention are taken out (signals.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import decodeAudio from 'audio-decode';
import { createAudioEncoder } from '../../src/audio/encoder.ts';
import type { AudioEncoder } from '../../src/audio/encoders/common.ts';
import { AUDIO_FORMATS, CONTENT_TYPES } from '../../src/audio/formats.ts';
import { concatBytes, pcm16ToFloat } from '../../src/audio/pcm.ts';
import { resample } from '../../src/audio/resample.ts';
import { isDramaError } from '../../src/errors.ts';
import { alignedSnr, harmonicTone, noise } from './signals.ts';

const RATE = 44100;

/** The test tone plus a little noise, so that no codec sees a pure periodic signal. */
function testSignal(sampleRate: number, seconds: number): Float32Array {
  const tone = harmonicTone(sampleRate, seconds);
  const hiss = noise(tone.length, 0.005);
  return tone.map((value, index) => value + hiss[index]!);
}

/** Pushes in uneven pieces, as the engine's growing frame groups do. */
function encodeInPieces(encoder: AudioEncoder, samples: Float32Array): Uint8Array {
  const chunks: Uint8Array[] = [];
  let offset = 0;
  for (const size of [1, 2047, 2048, 4096, 8192]) {
    chunks.push(encoder.push(samples.subarray(offset, offset + size)));
    offset += size;
  }
  chunks.push(encoder.push(samples.subarray(offset)));
  chunks.push(encoder.finish());
  return concatBytes(chunks);
}

async function decodedAt(bytes: Uint8Array, sampleRate: number): Promise<Float32Array> {
  const decoded = await decodeAudio(bytes);
  assert.equal(decoded.channelData.length, 1, 'mono');
  const samples = decoded.channelData[0]!;
  return decoded.sampleRate === sampleRate ? samples : resample(samples, decoded.sampleRate, sampleRate);
}

describe('formats', () => {
  it('has a content type for every format', () => {
    assert.deepEqual(Object.keys(CONTENT_TYPES).sort(), [...AUDIO_FORMATS].sort());
  });
});

describe('lossless encoders', () => {
  // A 0.9-peak sine: 16-bit quantisation alone leaves about 98 dB.
  const sine = Float32Array.from({ length: RATE }, (_, index) => 0.9 * Math.sin((2 * Math.PI * 440 * index) / RATE));

  it('pcm is s16le of the input, exactly', async () => {
    const encoder = await createAudioEncoder('pcm', { sampleRate: 24000 });
    const bytes = encodeInPieces(encoder, sine);
    assert.equal(bytes.length, sine.length * 2);
    const back = pcm16ToFloat(bytes);
    for (let index = 0; index < sine.length; index += 97) {
      assert.equal(back[index], Math.round(sine[index]! * 32768) / 32768);
    }
  });

  for (const format of ['wav', 'flac'] as const) {
    it(`${format}: decodes to the 16-bit input exactly, SNR >= 90 dB`, async () => {
      const encoder = await createAudioEncoder(format, { sampleRate: RATE });
      assert.equal(encoder.streamable, format === 'wav');
      const decoded = await decodedAt(encodeInPieces(encoder, sine), RATE);
      assert.equal(decoded.length, sine.length);
      const quantised = sine.map((value) => Math.round(value * 32768));
      // audio-decode scales by 1/32767 (flac) or 1/32767 and 1/32768 by sign (wav); undo either.
      for (let index = 0; index < sine.length; index++) {
        const integer = decoded[index]! * (decoded[index]! > 0 || format === 'flac' ? 32767 : 32768);
        assert.equal(Math.round(integer), Math.min(32767, quantised[index]!), `sample ${index}`);
      }
      const { snr } = alignedSnr(sine, decoded, 0);
      assert.ok(snr >= 90, `SNR ${snr.toFixed(1)} dB`);
    });
  }

  it('flac compresses a tone below 70 % of the PCM size', async () => {
    const encoder = await createAudioEncoder('flac', { sampleRate: RATE });
    const bytes = encodeInPieces(encoder, testSignal(RATE, 1));
    assert.ok(bytes.length < 0.7 * RATE * 2, `${bytes.length} bytes`);
  });

  it('flac encodes a silent and a one-sample input', async () => {
    for (const input of [new Float32Array(5000), new Float32Array([0.25])]) {
      const encoder = await createAudioEncoder('flac', { sampleRate: 16000 });
      encoder.push(input);
      const decoded = await decodedAt(encoder.finish(), 16000);
      assert.equal(decoded.length, input.length);
    }
  });
});

describe('lossy encoders', () => {
  // Thresholds sit 3 dB or more under the values measured on this signal (libopus may take other SIMD paths on
  // other CPUs); waveform SNR undersells perceptual codecs.
  const cases = [
    { format: 'mp3', sampleRate: 44100, bitrate: 128000, minimumSnr: 25 },
    { format: 'mp3', sampleRate: 24000, bitrate: 64000, minimumSnr: 25 },
    { format: 'opus', sampleRate: 48000, bitrate: 64000, minimumSnr: 20 },
    { format: 'opus', sampleRate: 44100, bitrate: 64000, minimumSnr: 20 },
    { format: 'opus', sampleRate: 24000, bitrate: 32000, minimumSnr: 18 },
    { format: 'aac', sampleRate: 44100, bitrate: 128000, minimumSnr: 18 },
    { format: 'aac', sampleRate: 48000, bitrate: 128000, minimumSnr: 20 },
  ] as const;
  for (const { format, sampleRate, bitrate, minimumSnr } of cases) {
    it(`${format} at ${sampleRate} Hz, ${bitrate / 1000} kbit/s: SNR >= ${minimumSnr} dB`, async () => {
      const input = testSignal(sampleRate, 1);
      const encoder = await createAudioEncoder(format, { sampleRate, bitrate });
      assert.equal(encoder.sampleRate, sampleRate);
      const decoded = await decodedAt(encodeInPieces(encoder, input), sampleRate);
      const { snr } = alignedSnr(input, decoded, 3000);
      assert.ok(snr >= minimumSnr, `SNR ${snr.toFixed(1)} dB`);
      if (format === 'opus') assert.equal(decoded.length, input.length, 'the last granule trims the padding');
    });
  }

  it('mp3 keeps the requested rate at a low bit rate (LAME would otherwise drop to 22050 Hz)', async () => {
    const encoder = await createAudioEncoder('mp3', { sampleRate: 48000, bitrate: 32000 });
    const decoded = await decodeAudio(concatBytes([encoder.push(testSignal(48000, 0.2)), encoder.finish()]));
    assert.equal(decoded.sampleRate, 48000);
  });

  it('mp3 streams: bytes come out before finish', async () => {
    const encoder = await createAudioEncoder('mp3', { sampleRate: 24000 });
    assert.ok(encoder.push(testSignal(24000, 0.5)).length > 0);
  });

  it('refuses sample rates and bit rates the codec cannot carry', async () => {
    const refused = (code: string) => (error: unknown) => isDramaError(error) && error.code === code;
    await assert.rejects(createAudioEncoder('mp3', { sampleRate: 44101 }), refused('AUDIO_SAMPLE_RATE_UNSUPPORTED'));
    await assert.rejects(createAudioEncoder('aac', { sampleRate: 23000 }), refused('AUDIO_SAMPLE_RATE_UNSUPPORTED'));
    await assert.rejects(createAudioEncoder('wav', { sampleRate: 0 }), refused('AUDIO_SAMPLE_RATE_UNSUPPORTED'));
    await assert.rejects(
      createAudioEncoder('opus', { sampleRate: 48000, bitrate: 100 }),
      refused('AUDIO_BITRATE_UNSUPPORTED'),
    );
  });

  it('refuses push after finish', async () => {
    const encoder = await createAudioEncoder('pcm', { sampleRate: 24000 });
    encoder.finish();
    assert.throws(
      () => encoder.push(new Float32Array(1)),
      (error) => isDramaError(error) && error.kind === 'internal',
    );
  });
});
