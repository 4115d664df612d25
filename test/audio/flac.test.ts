// The FLAC writer's parts against published check values, and files read back by audio-decode's libFLAC.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import decodeAudio from 'audio-decode';
import { BitWriter } from '../../src/audio/bit-writer.ts';
import { encodeFlac } from '../../src/audio/encoders/flac.ts';
import { crc8, crc16 } from '../../src/audio/flac-frame.ts';
import { floatToPcm16 } from '../../src/audio/pcm.ts';
import { harmonicTone } from './signals.ts';

describe('FLAC parts', () => {
  it('CRC-8 (polynomial 0x07) of "123456789" is 0xF4 and CRC-16 (0x8005) is 0xFEE8', () => {
    const check = new TextEncoder().encode('123456789');
    assert.equal(crc8(check), 0xf4);
    assert.equal(crc16(check), 0xfee8);
  });

  it('writes bits MSB first, signed values in two’s complement, Rice codes as unary + remainder', () => {
    const writer = new BitWriter();
    writer.write(0b101, 3);
    writer.writeSigned(-2, 5); // 11110
    writer.writeRice(9, 2); // quotient 2 -> 001, remainder 01
    writer.write(0x123456789, 36);
    writer.alignToByte();
    const bits = [...writer.view()].map((byte) => byte.toString(2).padStart(8, '0')).join('');
    assert.equal(bits.slice(0, 13), '1011111000101');
    assert.equal(bits.slice(13, 49), (0x123456789).toString(2).padStart(36, '0'));
  });
});

describe('FLAC files', () => {
  it('STREAMINFO carries the rate, sample count and the MD5 of the 16-bit samples', () => {
    const input = harmonicTone(22050, 0.3);
    const file = encodeFlac(input, 22050);
    const view = new DataView(file.buffer, file.byteOffset);
    assert.equal(new TextDecoder().decode(file.subarray(0, 4)), 'fLaC');
    assert.equal(view.getUint32(18) >>> 12, 22050);
    assert.equal((file[21]! & 0x0f) * 2 ** 32 + view.getUint32(22), input.length);
    const md5 = createHash('md5').update(floatToPcm16(input)).digest();
    assert.deepEqual([...file.subarray(26, 42)], [...md5]);
  });

  it('decodes at a rate with no table code (44101 Hz) and past frame 127 (multi-byte frame numbers)', async () => {
    const rate = 8000;
    const input = harmonicTone(rate, (4096 * 130) / rate);
    for (const sampleRate of [44101, rate]) {
      const decoded = await decodeAudio(encodeFlac(input, sampleRate));
      assert.equal(decoded.sampleRate, sampleRate);
      assert.equal(decoded.channelData[0]!.length, input.length);
      const last = input.length - 1;
      assert.equal(Math.round(decoded.channelData[0]![last]! * 32767), Math.round(input[last]! * 32768));
    }
  });

  it('falls back to verbatim frames for white noise without growing past PCM size much', () => {
    let state = 7;
    const input = Float32Array.from({ length: 8192 }, () => {
      state = (state * 1103515245 + 12345) >>> 0;
      return state / 2 ** 32 - 0.5;
    });
    assert.ok(encodeFlac(input, 16000).length < 8192 * 2 * 1.01 + 100);
  });
});
