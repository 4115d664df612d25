// Ogg page muxer for one logical stream (RFC 3533). A page holds whole packets only, so a stream cut after any
// page ends on a packet boundary. Page header: "OggS", version 0, flags (2 = first page, 4 = last page),
// granule position (int64 LE), serial, page sequence, CRC-32 (polynomial 0x04C11DB7, MSB first, initial 0,
// computed with the CRC field zeroed), segment count, lacing values (255 = packet continues).

const HEADER_BYTES = 27;
const MAX_SEGMENTS = 255;
const FLAG_FIRST_PAGE = 0x02;
const FLAG_LAST_PAGE = 0x04;

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let index = 0; index < 256; index++) {
    let remainder = index << 24;
    for (let bit = 0; bit < 8; bit++) {
      remainder = remainder & 0x80000000 ? (remainder << 1) ^ 0x04c11db7 : remainder << 1;
    }
    table[index] = remainder >>> 0;
  }
  return table;
})();

export function oggCrc(bytes: Uint8Array): number {
  let crc = 0;
  for (let index = 0; index < bytes.length; index++) {
    crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ bytes[index]!) & 0xff]!) >>> 0;
  }
  return crc;
}

export interface OggPacket {
  readonly data: Uint8Array;
  /** Granule position after this packet (for Opus: 48 kHz samples including the pre-skip). */
  readonly granule: number;
}

export class OggStreamWriter {
  private sequence = 0;

  constructor(private readonly serial: number) {}

  /** Pages for `packets`, packed greedily; the last page gets the end-of-stream flag when `last` is set. */
  pages(packets: readonly OggPacket[], last = false): Uint8Array[] {
    const pages: Uint8Array[] = [];
    let pagePackets: OggPacket[] = [];
    let segments = 0;
    for (const packet of packets) {
      const needed = Math.floor(packet.data.length / 255) + 1;
      if (needed > MAX_SEGMENTS) throw new Error(`Ogg packet of ${packet.data.length} bytes does not fit one page`);
      if (segments + needed > MAX_SEGMENTS) {
        pages.push(this.page(pagePackets, false));
        pagePackets = [];
        segments = 0;
      }
      pagePackets.push(packet);
      segments += needed;
    }
    if (pagePackets.length > 0 || last) pages.push(this.page(pagePackets, last));
    return pages;
  }

  private page(packets: readonly OggPacket[], last: boolean): Uint8Array {
    const lacing: number[] = [];
    let bodyBytes = 0;
    for (const packet of packets) {
      let remaining = packet.data.length;
      while (remaining >= 255) {
        lacing.push(255);
        remaining -= 255;
      }
      lacing.push(remaining);
      bodyBytes += packet.data.length;
    }
    const page = new Uint8Array(HEADER_BYTES + lacing.length + bodyBytes);
    const view = new DataView(page.buffer);
    page.set([0x4f, 0x67, 0x67, 0x53], 0);
    page[5] = (this.sequence === 0 ? FLAG_FIRST_PAGE : 0) | (last ? FLAG_LAST_PAGE : 0);
    // A page that completes no packet would carry granule -1; the muxer never writes one except an empty last page.
    const granule = packets.length > 0 ? packets[packets.length - 1]!.granule : -1;
    view.setUint32(6, granule < 0 ? 0xffffffff : granule % 0x100000000, true);
    view.setUint32(10, granule < 0 ? 0xffffffff : Math.floor(granule / 0x100000000), true);
    view.setUint32(14, this.serial, true);
    view.setUint32(18, this.sequence++, true);
    page[26] = lacing.length;
    page.set(lacing, HEADER_BYTES);
    let offset = HEADER_BYTES + lacing.length;
    for (const packet of packets) {
      page.set(packet.data, offset);
      offset += packet.data.length;
    }
    view.setUint32(22, oggCrc(page), true);
    return page;
  }
}
