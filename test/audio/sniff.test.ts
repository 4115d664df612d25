// Upload format detection from magic numbers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sniffUploadFormat } from '../../src/audio/sniff.ts';

const text = (value: string) => new TextEncoder().encode(value);

function oggFirstPage(packetStart: Uint8Array): Uint8Array {
  const page = new Uint8Array(28 + packetStart.length);
  page.set(text('OggS'), 0);
  page[26] = 1; // one lacing value
  page[27] = packetStart.length;
  page.set(packetStart, 28);
  return page;
}

function id3Tag(bodyBytes: number): Uint8Array {
  const tag = new Uint8Array(10 + bodyBytes);
  tag.set(text('ID3'), 0);
  tag[3] = 4;
  // Synchsafe size: 7 bits per byte.
  tag[8] = (bodyBytes >> 7) & 0x7f;
  tag[9] = bodyBytes & 0x7f;
  return tag;
}

describe('sniffUploadFormat', () => {
  const cases: [string, Uint8Array, string | undefined][] = [
    ['RIFF/WAVE', text('RIFF\0\0\0\0WAVEfmt '), 'wav'],
    ['native FLAC', text('fLaC\0\0\0\x22'), 'flac'],
    ['Ogg Opus', oggFirstPage(text('OpusHead')), 'opus'],
    ['Ogg Vorbis', oggFirstPage(text('\x01vorbis')), 'vorbis'],
    ['Ogg FLAC', oggFirstPage(text('\x7fFLAC')), 'flac'],
    ['Ogg of an unknown codec', oggFirstPage(text('\x80theora')), undefined],
    ['MPEG-1 layer III frame', new Uint8Array([0xff, 0xfb, 0x90, 0x00]), 'mp3'],
    ['ADTS AAC frame', new Uint8Array([0xff, 0xf1, 0x50, 0x80]), 'aac'],
    ['MP4 ftyp box', new Uint8Array([0, 0, 0, 0x20, ...text('ftypM4A ')]), 'm4a'],
    ['ID3v2 then an mp3 frame', new Uint8Array([...id3Tag(300), 0xff, 0xfb, 0x90, 0x00]), 'mp3'],
    ['ID3v2 then FLAC', new Uint8Array([...id3Tag(20), ...text('fLaC')]), 'flac'],
    ['plain text', text('hello, this is not audio'), undefined],
    ['a PNG image', new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), undefined],
    ['one byte', new Uint8Array([0xff]), undefined],
  ];
  for (const [name, bytes, expected] of cases) {
    it(`${name} -> ${expected ?? 'unknown'}`, () => assert.equal(sniffUploadFormat(bytes), expected));
  }
});
