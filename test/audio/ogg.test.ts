// The Ogg page muxer and the Opus stream: CRC against a published check value, page structure read back by
// hand, and playability of every prefix that ends on a page boundary.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import decodeAudio from 'audio-decode';
import { createAudioEncoder } from '../../src/audio/encoder.ts';
import { OggStreamWriter, oggCrc } from '../../src/audio/ogg.ts';
import { concatBytes } from '../../src/audio/pcm.ts';
import { harmonicTone } from './signals.ts';

interface PageInfo {
  readonly start: number;
  readonly end: number;
  readonly flags: number;
  readonly granule: number;
  readonly sequence: number;
  readonly packetSizes: number[];
}

/** Splits an Ogg stream into pages, checking each page's CRC. */
function readPages(bytes: Uint8Array): PageInfo[] {
  const pages: PageInfo[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let offset = 0;
  while (offset < bytes.length) {
    assert.equal(String.fromCharCode(...bytes.subarray(offset, offset + 4)), 'OggS', `capture pattern at ${offset}`);
    const segments = bytes[offset + 26]!;
    const lacing = [...bytes.subarray(offset + 27, offset + 27 + segments)];
    const end = offset + 27 + segments + lacing.reduce((sum, value) => sum + value, 0);
    const page = bytes.slice(offset, end);
    const stored = view.getUint32(offset + 22, true);
    new DataView(page.buffer).setUint32(22, 0, true);
    assert.equal(oggCrc(page), stored, `CRC of page at ${offset}`);
    const packetSizes: number[] = [];
    let size = 0;
    for (const value of lacing) {
      size += value;
      if (value < 255) {
        packetSizes.push(size);
        size = 0;
      }
    }
    assert.equal(size, 0, 'no packet continues past its page');
    const granule = view.getUint32(offset + 6, true) + view.getUint32(offset + 10, true) * 2 ** 32;
    pages.push({
      start: offset,
      end,
      flags: bytes[offset + 5]!,
      granule,
      sequence: view.getUint32(offset + 18, true),
      packetSizes,
    });
    offset = end;
  }
  return pages;
}

describe('Ogg muxer', () => {
  it('CRC-32 (polynomial 0x04C11DB7, initial 0, no reflection) of "123456789" is 0x89A1897F', () => {
    assert.equal(oggCrc(new TextEncoder().encode('123456789')), 0x89a1897f);
  });

  it('laces a 600-byte packet as 255, 255, 90 and flags the first and last pages', () => {
    const writer = new OggStreamWriter(7);
    const pages = [
      ...writer.pages([{ data: new Uint8Array(600), granule: 5 }]),
      ...writer.pages([{ data: new Uint8Array(3), granule: 9 }], true),
    ];
    const info = readPages(concatBytes(pages));
    assert.deepEqual(
      info.map((page) => page.packetSizes),
      [[600], [3]],
    );
    assert.deepEqual([...pages[0]!.subarray(27, 30)], [255, 255, 90]);
    assert.deepEqual(
      info.map((page) => page.flags),
      [2, 4],
    );
    assert.deepEqual(
      info.map((page) => page.sequence),
      [0, 1],
    );
    assert.deepEqual(
      info.map((page) => page.granule),
      [5, 9],
    );
  });

  it('starts a new page before 255 lacing values', () => {
    const writer = new OggStreamWriter(1);
    const packets = Array.from({ length: 300 }, (_, index) => ({ data: new Uint8Array(10), granule: index + 1 }));
    const info = readPages(concatBytes(writer.pages(packets)));
    assert.deepEqual(
      info.map((page) => page.packetSizes.length),
      [255, 45],
    );
    assert.deepEqual(
      info.map((page) => page.granule),
      [255, 300],
    );
  });
});

describe('Opus in Ogg', () => {
  it('is playable when cut after any page, each prefix decoding to its granule minus the pre-skip', async () => {
    const input = harmonicTone(48000, 0.6);
    const encoder = await createAudioEncoder('opus', { sampleRate: 48000 });
    const chunks: Uint8Array[] = [];
    for (let offset = 0; offset < input.length; offset += 4800)
      chunks.push(encoder.push(input.subarray(offset, offset + 4800)));
    chunks.push(encoder.finish());
    const stream = concatBytes(chunks);
    const pages = readPages(stream);
    assert.equal(String.fromCharCode(...stream.subarray(pages[0]!.start + 28, pages[0]!.start + 36)), 'OpusHead');
    const preSkip = new DataView(stream.buffer, stream.byteOffset).getUint16(pages[0]!.start + 28 + 10, true);
    assert.ok(preSkip > 0);
    assert.deepEqual(
      pages.slice(0, 2).map((page) => page.granule),
      [0, 0],
    );
    assert.equal(pages.at(-1)!.flags & 4, 4, 'end-of-stream flag on the last page');
    assert.equal(pages.at(-1)!.granule, preSkip + input.length);
    assert.ok(pages.length > 8, `${pages.length} pages`);
    for (const index of [0, 1]) {
      const headersOnly = await decodeAudio(stream.subarray(0, pages[index]!.end));
      assert.equal(headersOnly.channelData[0]?.length ?? 0, 0, `cut after header page ${index}`);
    }
    for (let index = 2; index < pages.length; index++) {
      const prefix = stream.subarray(0, pages[index]!.end);
      const decoded = await decodeAudio(prefix);
      assert.equal(decoded.channelData[0]!.length, pages[index]!.granule - preSkip, `cut after page ${index}`);
    }
  });
});
