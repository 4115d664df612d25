// A native FLAC stream cut into runs of whole frames, for a decoder that loses frames cut across its input chunks
// and for a duration limit that must hold before the audio expands: each run's sample count is read from its frame
// headers. A frame is found by its sync code and header CRC-8, and ends where the next one starts and the frame's
// CRC-16 matches. Anything that does not parse is handed on as it is, for the decoder to refuse.
import { crc8, crc16Step } from './flac-frame.ts';

export interface FlacRun {
  readonly bytes: Uint8Array;
  /** Samples per channel the run's frame headers declare (0 for bytes that did not parse as frames). */
  readonly samples: number;
}

/** Bytes of the metadata before the first frame (the "fLaC" marker and its blocks); -1 when they do not parse. */
function framesStart(bytes: Uint8Array): number {
  let offset = 0;
  while (offset + 4 <= bytes.length && String.fromCharCode(...bytes.subarray(offset, offset + 4)) !== 'fLaC') offset++;
  if (offset + 4 > bytes.length) return -1;
  offset += 4;
  for (;;) {
    if (offset + 4 > bytes.length) return -1;
    const last = (bytes[offset]! & 0x80) !== 0;
    offset += 4 + ((bytes[offset + 1]! << 16) | (bytes[offset + 2]! << 8) | bytes[offset + 3]!);
    if (last) return offset <= bytes.length ? offset : -1;
  }
}

/** The block size of a valid frame header at `offset` (sync, fields, CRC-8), else 0. */
export function frameHeaderSamples(bytes: Uint8Array, offset: number): number {
  if (offset + 6 > bytes.length || bytes[offset] !== 0xff || (bytes[offset + 1]! & 0xfe) !== 0xf8) return 0;
  const sizeCode = bytes[offset + 2]! >> 4;
  const rateCode = bytes[offset + 2]! & 0x0f;
  if (sizeCode === 0 || rateCode === 15 || (bytes[offset + 3]! & 0x01) !== 0) return 0;
  let position = offset + 4;
  // The frame or sample number, UTF-8 coded in 1 to 7 bytes.
  const lead = bytes[position]!;
  const extra = lead < 0x80 ? 0 : lead >= 0xfe ? 6 : lead >= 0xfc ? 5 : lead >= 0xf8 ? 4 : lead >= 0xf0 ? 3 : 2;
  if (lead >= 0x80 && lead < 0xc0) return 0;
  position += 1 + (lead >= 0xc0 && lead < 0xe0 ? 1 : extra);
  let samples = sizeCode === 1 ? 192 : sizeCode <= 5 ? 576 << (sizeCode - 2) : 256 << (sizeCode - 8);
  if (sizeCode === 6) samples = bytes[position++]! + 1;
  else if (sizeCode === 7) {
    samples = ((bytes[position]! << 8) | bytes[position + 1]!) + 1;
    position += 2;
  }
  position += rateCode === 12 ? 1 : rateCode === 13 || rateCode === 14 ? 2 : 0;
  if (position >= bytes.length || crc8(bytes.subarray(offset, position)) !== bytes[position]) return 0;
  return samples;
}

/** Where the frame starting at `start` ends: the next valid header right after a matching CRC-16, or the end. */
function frameEnd(bytes: Uint8Array, start: number): number {
  let crc = 0;
  for (let index = start; index + 2 <= bytes.length; index++) {
    const stored = (bytes[index]! << 8) | bytes[index + 1]!;
    const next = index + 2;
    if (next > start + 6 && crc === stored && (next === bytes.length || frameHeaderSamples(bytes, next) > 0))
      return next;
    crc = crc16Step(crc, bytes[index]!);
  }
  return -1;
}

/** Runs of whole frames, each of at least `samplesPerRun` samples (the last may hold fewer). */
export function* splitFlacFrames(bytes: Uint8Array, samplesPerRun: number): Generator<FlacRun> {
  let offset = framesStart(bytes);
  if (offset < 0) {
    yield { bytes, samples: 0 };
    return;
  }
  let runStart = 0;
  let samples = 0;
  while (offset < bytes.length) {
    const frameSamples = frameHeaderSamples(bytes, offset);
    const end = frameSamples > 0 ? frameEnd(bytes, offset) : -1;
    if (end < 0) break;
    samples += frameSamples;
    offset = end;
    if (samples >= samplesPerRun) {
      yield { bytes: bytes.subarray(runStart, offset), samples };
      runStart = offset;
      samples = 0;
    }
  }
  if (samples > 0) yield { bytes: bytes.subarray(runStart, offset), samples };
  if (offset < bytes.length) yield { bytes: bytes.subarray(offset), samples: 0 };
}
