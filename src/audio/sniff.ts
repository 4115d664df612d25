// Container/codec detection of uploaded audio from its first bytes (magic numbers), so that each upload goes to
// the one decoder that can read it and anything else is refused by name.

export type UploadFormat = 'wav' | 'mp3' | 'flac' | 'opus' | 'vorbis' | 'aac' | 'm4a';

function ascii(bytes: Uint8Array, offset: number, length: number): string {
  return String.fromCharCode(...bytes.subarray(offset, offset + length));
}

/** Bytes taken by a leading ID3v2 tag (10-byte header + synchsafe size + optional footer), else 0. */
function id3Length(bytes: Uint8Array): number {
  if (bytes.length < 10 || ascii(bytes, 0, 3) !== 'ID3') return 0;
  const size = ((bytes[6]! & 0x7f) << 21) | ((bytes[7]! & 0x7f) << 14) | ((bytes[8]! & 0x7f) << 7) | (bytes[9]! & 0x7f);
  const footer = bytes[5]! & 0x10 ? 10 : 0;
  return 10 + size + footer;
}

function frameSync(bytes: Uint8Array, offset: number): UploadFormat | undefined {
  if (bytes.length < offset + 2 || bytes[offset] !== 0xff) return undefined;
  const second = bytes[offset + 1]!;
  // 12-bit sync and layer 00: AAC in ADTS; 11-bit sync and a non-zero layer: MPEG audio layer I–III.
  if ((second & 0xf6) === 0xf0) return 'aac';
  if ((second & 0xe0) === 0xe0 && (second & 0x06) !== 0) return 'mp3';
  return undefined;
}

function oggCodec(bytes: Uint8Array): UploadFormat | undefined {
  if (bytes.length < 28) return undefined;
  const packetStart = 27 + bytes[26]!;
  if (ascii(bytes, packetStart, 8) === 'OpusHead') return 'opus';
  if (ascii(bytes, packetStart + 1, 6) === 'vorbis') return 'vorbis';
  if (ascii(bytes, packetStart + 1, 4) === 'FLAC') return 'flac';
  return undefined;
}

/** The upload's format, or undefined when it is none of the accepted ones. */
export function sniffUploadFormat(bytes: Uint8Array): UploadFormat | undefined {
  if (bytes.length >= 4 && ascii(bytes, 0, 4) === 'RIFF') return 'wav';
  if (bytes.length >= 4 && ascii(bytes, 0, 4) === 'fLaC') return 'flac';
  if (bytes.length >= 4 && ascii(bytes, 0, 4) === 'OggS') return oggCodec(bytes);
  if (bytes.length >= 8 && ascii(bytes, 4, 4) === 'ftyp') return 'm4a';
  const tag = id3Length(bytes);
  if (tag > 0) {
    if (tag + 4 <= bytes.length && ascii(bytes, tag, 4) === 'fLaC') return 'flac';
    return frameSync(bytes, tag) ?? (tag >= bytes.length ? 'mp3' : undefined);
  }
  return frameSync(bytes, 0);
}
