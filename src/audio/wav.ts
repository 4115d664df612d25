// RIFF/WAVE reading and writing. Samples are float32 in [-1, 1], one Float32Array per channel.
// Reads PCM integer 8 (unsigned), 16, 24, 32 bit and IEEE float 32/64, plain or WAVE_FORMAT_EXTENSIBLE.
// Writes mono 16-bit PCM or 32-bit float with the canonical 44-byte header; a streaming header carries
// 0xFFFFFFFF for the RIFF and data sizes (the length is unknown when the first bytes leave).
import { DramaError } from '../errors.ts';
import type { AudioLimits } from './limits.ts';
import { floatToInt16 } from './pcm.ts';

export interface WavAudio {
  readonly sampleRate: number;
  readonly bitsPerSample: number;
  /** One array per channel, de-interleaved. */
  readonly channels: Float32Array[];
}

export type WavBits = 16 | 32;

const FORMAT_PCM = 1;
const FORMAT_FLOAT = 3;
const FORMAT_EXTENSIBLE = 0xfffe;
/** Size fields of a stream whose length is not known yet. */
export const WAV_STREAMING_SIZE = 0xffffffff;
const HEADER_BYTES = 44;

function fourCc(bytes: Uint8Array, offset: number): string {
  return String.fromCharCode(bytes[offset]!, bytes[offset + 1]!, bytes[offset + 2]!, bytes[offset + 3]!);
}

function truncated(what: string, needed: number, available: number): DramaError {
  return new DramaError(
    'AUDIO_TRUNCATED',
    `WAV file is truncated: ${what} needs ${needed} bytes, ${available} present`,
    {
      param: 'audio',
    },
  );
}

interface WavFormat {
  readonly encoding: 'int' | 'float';
  readonly channelCount: number;
  readonly sampleRate: number;
  readonly bitsPerSample: number;
  readonly blockAlign: number;
}

function parseFormat(view: DataView, offset: number, size: number): WavFormat {
  if (size < 16) throw truncated('the fmt chunk', 16, size);
  let tag = view.getUint16(offset, true);
  const channelCount = view.getUint16(offset + 2, true);
  const sampleRate = view.getUint32(offset + 4, true);
  const blockAlign = view.getUint16(offset + 12, true);
  const bitsPerSample = view.getUint16(offset + 14, true);
  if (tag === FORMAT_EXTENSIBLE) {
    if (size < 40) throw truncated('the extensible fmt chunk', 40, size);
    // The sub-format GUID starts with the plain format tag.
    tag = view.getUint16(offset + 24, true);
  }
  const supported =
    (tag === FORMAT_PCM && [8, 16, 24, 32].includes(bitsPerSample)) ||
    (tag === FORMAT_FLOAT && (bitsPerSample === 32 || bitsPerSample === 64));
  if (!supported) {
    throw new DramaError(
      'AUDIO_UNSUPPORTED_ENCODING',
      `WAV encoding (format tag ${tag}, ${bitsPerSample} bits) is not supported; use PCM 8/16/24/32-bit or float 32/64-bit`,
      { param: 'audio' },
    );
  }
  return { encoding: tag === FORMAT_FLOAT ? 'float' : 'int', channelCount, sampleRate, bitsPerSample, blockAlign };
}

function checkFormat(format: WavFormat, limits: Partial<AudioLimits>): void {
  const minRate = limits.minSampleRate ?? 1;
  const maxRate = limits.maxSampleRate ?? 4_294_967_295;
  if (format.sampleRate < minRate || format.sampleRate > maxRate) {
    throw new DramaError(
      'AUDIO_BAD_SAMPLE_RATE',
      `WAV sample rate ${format.sampleRate} Hz is outside ${minRate}–${maxRate} Hz`,
      { param: 'audio' },
    );
  }
  if (format.channelCount === 0) {
    throw new DramaError('AUDIO_EMPTY', 'WAV file declares 0 channels', { param: 'audio' });
  }
  if (limits.maxChannels !== undefined && format.channelCount > limits.maxChannels) {
    throw new DramaError(
      'AUDIO_TOO_MANY_CHANNELS',
      `WAV file has ${format.channelCount} channels; at most ${limits.maxChannels} are accepted`,
      { param: 'audio' },
    );
  }
  if (format.blockAlign !== format.channelCount * (format.bitsPerSample / 8)) {
    throw new DramaError(
      'AUDIO_UNSUPPORTED_ENCODING',
      `WAV block align ${format.blockAlign} does not match ${format.channelCount} channels of ${format.bitsPerSample} bits`,
      { param: 'audio' },
    );
  }
}

/** Parses a WAV file; `limits` (optional) bound channels, rate and duration before any sample is read. */
export function readWav(bytes: Uint8Array, limits: Partial<AudioLimits> = {}): WavAudio {
  if (bytes.length < 12) {
    const riffPrefix = bytes.length >= 4 && fourCc(bytes, 0) === 'RIFF';
    if (riffPrefix) throw truncated('the RIFF header', 12, bytes.length);
  }
  if (bytes.length < 12 || fourCc(bytes, 0) !== 'RIFF' || fourCc(bytes, 8) !== 'WAVE') {
    throw new DramaError('AUDIO_UNKNOWN_FORMAT', 'not a WAV file: missing the RIFF/WAVE magic', { param: 'audio' });
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let offset = 12;
  let format: WavFormat | undefined;
  while (offset + 8 <= bytes.length) {
    const id = fourCc(bytes, offset);
    const size = view.getUint32(offset + 4, true);
    const body = offset + 8;
    if (id === 'fmt ') {
      if (body + Math.min(size, 40) > bytes.length) throw truncated('the fmt chunk', size, bytes.length - body);
      format = parseFormat(view, body, size);
      checkFormat(format, limits);
    } else if (id === 'data') {
      if (format === undefined) {
        throw new DramaError('AUDIO_UNSUPPORTED_ENCODING', 'WAV data chunk comes before its fmt chunk', {
          param: 'audio',
        });
      }
      return readData(bytes, view, body, size, format, limits);
    }
    // Chunks are padded to even sizes.
    offset = body + size + (size & 1);
  }
  if (format === undefined) throw truncated('a fmt chunk', 24, bytes.length - 12);
  throw truncated('a data chunk', 8, bytes.length - offset);
}

function readData(
  bytes: Uint8Array,
  view: DataView,
  body: number,
  size: number,
  format: WavFormat,
  limits: Partial<AudioLimits>,
): WavAudio {
  const available = bytes.length - body;
  // A streaming writer leaves 0 or 0xFFFFFFFF: the data runs to the end of the file.
  const streaming = size === WAV_STREAMING_SIZE || (size === 0 && available > 0);
  const declaredFrames = Math.floor((streaming ? available : size) / format.blockAlign);
  const seconds = declaredFrames / format.sampleRate;
  if (limits.maxDurationSeconds !== undefined && seconds > limits.maxDurationSeconds) {
    throw new DramaError(
      'AUDIO_TOO_LONG',
      `WAV file declares ${seconds.toFixed(1)} s of audio; at most ${limits.maxDurationSeconds} s are accepted`,
      { param: 'audio' },
    );
  }
  if (!streaming && size > available) throw truncated('the data chunk', size, available);
  if (declaredFrames === 0) throw new DramaError('AUDIO_EMPTY', 'WAV file holds 0 samples', { param: 'audio' });
  const channels: Float32Array[] = [];
  for (let channel = 0; channel < format.channelCount; channel++) channels.push(new Float32Array(declaredFrames));
  const bytesPerSample = format.bitsPerSample / 8;
  const read = sampleReader(view, format);
  for (let frame = 0; frame < declaredFrames; frame++) {
    const frameOffset = body + frame * format.blockAlign;
    for (let channel = 0; channel < format.channelCount; channel++) {
      channels[channel]![frame] = read(frameOffset + channel * bytesPerSample);
    }
  }
  return { sampleRate: format.sampleRate, bitsPerSample: format.bitsPerSample, channels };
}

function sampleReader(view: DataView, format: WavFormat): (offset: number) => number {
  if (format.encoding === 'float') {
    return format.bitsPerSample === 32
      ? (offset) => view.getFloat32(offset, true)
      : (offset) => view.getFloat64(offset, true);
  }
  switch (format.bitsPerSample) {
    case 8:
      return (offset) => (view.getUint8(offset) - 128) / 128;
    case 16:
      return (offset) => view.getInt16(offset, true) / 32768;
    case 24:
      return (offset) => ((view.getInt8(offset + 2) << 16) | view.getUint16(offset, true)) / 8388608;
    default:
      return (offset) => view.getInt32(offset, true) / 2147483648;
  }
}

/** The 44-byte header for mono audio; `dataBytes` undefined gives the streaming sizes. */
export function wavHeader(sampleRate: number, bits: WavBits, dataBytes?: number): Uint8Array {
  const header = new Uint8Array(HEADER_BYTES);
  const view = new DataView(header.buffer);
  const bytesPerSample = bits / 8;
  const writeTag = (offset: number, tag: string) => {
    for (let index = 0; index < 4; index++) header[offset + index] = tag.charCodeAt(index);
  };
  writeTag(0, 'RIFF');
  view.setUint32(4, dataBytes === undefined ? WAV_STREAMING_SIZE : Math.min(36 + dataBytes, WAV_STREAMING_SIZE), true);
  writeTag(8, 'WAVE');
  writeTag(12, 'fmt ');
  view.setUint32(16, 16, true);
  view.setUint16(20, bits === 16 ? FORMAT_PCM : FORMAT_FLOAT, true);
  view.setUint16(22, 1, true);
  view.setUint32(24, sampleRate, true);
  view.setUint32(28, sampleRate * bytesPerSample, true);
  view.setUint16(32, bytesPerSample, true);
  view.setUint16(34, bits, true);
  writeTag(36, 'data');
  view.setUint32(40, dataBytes === undefined ? WAV_STREAMING_SIZE : dataBytes, true);
  return header;
}

/** Sample bytes of mono audio in the WAV layout: s16le, or float32 little-endian. */
export function wavSampleBytes(samples: Float32Array, bits: WavBits): Uint8Array {
  const bytes = new Uint8Array(samples.length * (bits / 8));
  const view = new DataView(bytes.buffer);
  for (let index = 0; index < samples.length; index++) {
    if (bits === 16) view.setInt16(index * 2, floatToInt16(samples[index]!), true);
    else view.setFloat32(index * 4, samples[index]!, true);
  }
  return bytes;
}

/** A whole mono WAV file. */
export function writeWav(
  samples: Float32Array,
  sampleRate: number,
  options: { bits: WavBits } = { bits: 16 },
): Uint8Array {
  const data = wavSampleBytes(samples, options.bits);
  const file = new Uint8Array(HEADER_BYTES + data.length);
  file.set(wavHeader(sampleRate, options.bits, data.length), 0);
  file.set(data, HEADER_BYTES);
  return file;
}
