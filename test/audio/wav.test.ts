// WAV writing and reading: exact 16-bit quantisation, float32 passthrough, streaming header sizes, refusals.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readWav, WAV_STREAMING_SIZE, wavHeader, writeWav } from '../../src/audio/wav.ts';
import { isDramaError } from '../../src/errors.ts';
import { noise } from './signals.ts';
import { handmadeWav } from './wav-files.ts';

function code(expected: string) {
  return (error: unknown) => isDramaError(error) && error.code === expected;
}

describe('writeWav / readWav', () => {
  it('round-trips 16-bit samples to their exact quantisation', () => {
    const input = noise(1000, 0.9);
    const decoded = readWav(writeWav(input, 22050, { bits: 16 }));
    assert.equal(decoded.sampleRate, 22050);
    assert.equal(decoded.bitsPerSample, 16);
    assert.equal(decoded.channels.length, 1);
    for (let index = 0; index < input.length; index++) {
      assert.equal(decoded.channels[0]![index], Math.round(input[index]! * 32768) / 32768);
    }
  });

  it('round-trips float32 samples bit for bit', () => {
    const input = noise(1000, 1.5);
    assert.deepEqual(readWav(writeWav(input, 44100, { bits: 32 })).channels[0], input);
  });

  it('writes the canonical header fields', () => {
    const file = writeWav(new Float32Array(10), 24000, { bits: 16 });
    const view = new DataView(file.buffer);
    assert.equal(file.length, 44 + 20);
    assert.equal(view.getUint32(4, true), 36 + 20);
    assert.equal(view.getUint16(20, true), 1);
    assert.equal(view.getUint32(24, true), 24000);
    assert.equal(view.getUint32(28, true), 48000);
    assert.equal(view.getUint32(40, true), 20);
  });

  it('clips out-of-range samples instead of wrapping', () => {
    const decoded = readWav(writeWav(new Float32Array([2, -2, Number.NaN]), 8000, { bits: 16 })).channels[0]!;
    assert.deepEqual([...decoded], [32767 / 32768, -1, 0]);
  });

  it('reads a streaming header (0xFFFFFFFF sizes) to the end of the file', () => {
    const header = wavHeader(16000, 16);
    assert.equal(new DataView(header.buffer).getUint32(40, true), WAV_STREAMING_SIZE);
    const samples = new Uint8Array([0x00, 0x40, 0x00, 0xc0, 0x01]); // 0.5, -0.5 and half a sample
    const decoded = readWav(new Uint8Array([...header, ...samples]));
    assert.deepEqual([...decoded.channels[0]!], [0.5, -0.5]);
  });

  it('reads 24-bit stereo and 8-bit unsigned', () => {
    const stereo = handmadeWav({ channels: 2, bits: 24, dataBytes: 6 });
    stereo.set([0x00, 0x00, 0x40, 0x00, 0x00, 0xc0], 44);
    const decoded = readWav(stereo);
    assert.deepEqual([decoded.channels[0]![0], decoded.channels[1]![0]], [0.5, -0.5]);
    const eightBit = handmadeWav({ bits: 8, dataBytes: 2 });
    eightBit.set([0xc0, 0x40], 44);
    assert.deepEqual([...readWav(eightBit).channels[0]!], [0.5, -0.5]);
  });

  it('reads WAVE_FORMAT_EXTENSIBLE by its sub-format', () => {
    const file = new Uint8Array(68 + 4);
    const view = new DataView(file.buffer);
    file.set(new TextEncoder().encode('RIFF'), 0);
    view.setUint32(4, file.length - 8, true);
    file.set(new TextEncoder().encode('WAVEfmt '), 8);
    view.setUint32(16, 40, true);
    view.setUint16(20, 0xfffe, true);
    view.setUint16(22, 1, true);
    view.setUint32(24, 48000, true);
    view.setUint32(28, 192000, true);
    view.setUint16(32, 4, true);
    view.setUint16(34, 32, true);
    view.setUint16(36, 22, true); // extension size
    view.setUint16(44, 3, true); // sub-format GUID starts with WAVE_FORMAT_IEEE_FLOAT
    file.set(new TextEncoder().encode('data'), 60);
    view.setUint32(64, 4, true);
    view.setFloat32(68, 0.125, true);
    const decoded = readWav(file);
    assert.equal(decoded.sampleRate, 48000);
    assert.deepEqual([...decoded.channels[0]!], [0.125]);
  });

  it('refuses wrong magic, truncation, empty data and odd encodings by name', () => {
    assert.throws(() => readWav(new TextEncoder().encode('RIFX0000WAVEfmt ')), code('AUDIO_UNKNOWN_FORMAT'));
    assert.throws(() => readWav(new TextEncoder().encode('RIFF00')), code('AUDIO_TRUNCATED'));
    assert.throws(() => readWav(handmadeWav({ dataBytes: 100, declaredDataBytes: 1000 })), code('AUDIO_TRUNCATED'));
    assert.throws(() => readWav(handmadeWav({ dataBytes: 0 }).subarray(0, 30)), code('AUDIO_TRUNCATED'));
    assert.throws(() => readWav(handmadeWav({ dataBytes: 0 })), code('AUDIO_EMPTY'));
    assert.throws(
      () => readWav(handmadeWav({ formatTag: 2, bits: 4, dataBytes: 10 })),
      code('AUDIO_UNSUPPORTED_ENCODING'),
    );
    assert.throws(() => readWav(handmadeWav({ channels: 0, dataBytes: 10 })), code('AUDIO_EMPTY'));
  });
});
