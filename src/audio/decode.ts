// Decoding of uploaded audio (reference voices): wav (own reader), mp3, flac, ogg vorbis/opus, aac (ADTS or
// m4a) through audio-decode. Output: mono float32 at the file's own rate (channels averaged).
// Compressed files are fed to the decoder in chunks so that duration and channel limits stop a long file
// early instead of after decoding all of it.
import decodeAudio from 'audio-decode';
import { DramaError } from '../errors.ts';
import { type AudioLimits, UPLOAD_LIMITS } from './limits.ts';
import { sniffUploadFormat, type UploadFormat } from './sniff.ts';
import { readWav } from './wav.ts';

export interface DecodedAudio {
  readonly sampleRate: number;
  /** Mono samples in [-1, 1]. */
  readonly samples: Float32Array;
}

const CHUNK_BYTES = 256 * 1024;
const DECODERS = {
  mp3: decodeAudio.mp3,
  flac: decodeAudio.flac,
  opus: decodeAudio.opus,
  vorbis: decodeAudio.oga,
  aac: decodeAudio.aac,
  m4a: decodeAudio.m4a,
} as const;

/** Averages channels into one. */
export function downmix(channels: readonly Float32Array[]): Float32Array {
  if (channels.length === 1) return channels[0]!;
  const length = Math.min(...channels.map((channel) => channel.length));
  const mono = new Float32Array(length);
  for (const channel of channels) for (let index = 0; index < length; index++) mono[index]! += channel[index]!;
  for (let index = 0; index < length; index++) mono[index]! /= channels.length;
  return mono;
}

function checkStream(
  format: UploadFormat,
  sampleRate: number,
  channelCount: number,
  frames: number,
  limits: AudioLimits,
) {
  if (sampleRate < limits.minSampleRate || sampleRate > limits.maxSampleRate) {
    throw new DramaError(
      'AUDIO_BAD_SAMPLE_RATE',
      `${format} sample rate ${sampleRate} Hz is outside ${limits.minSampleRate}–${limits.maxSampleRate} Hz`,
      { param: 'audio' },
    );
  }
  if (channelCount > limits.maxChannels) {
    throw new DramaError(
      'AUDIO_TOO_MANY_CHANNELS',
      `${format} file has ${channelCount} channels; at most ${limits.maxChannels} are accepted`,
      { param: 'audio' },
    );
  }
  if (frames / sampleRate > limits.maxDurationSeconds) {
    throw new DramaError(
      'AUDIO_TOO_LONG',
      `${format} file is longer than ${limits.maxDurationSeconds} s (${(frames / sampleRate).toFixed(1)} s decoded so far)`,
      { param: 'audio' },
    );
  }
}

/** The sample count a FLAC STREAMINFO block declares (0 when unknown or not native FLAC). */
function flacDeclaredFrames(bytes: Uint8Array): number {
  if (bytes.length < 26 || String.fromCharCode(...bytes.subarray(0, 4)) !== 'fLaC' || (bytes[4]! & 0x7f) !== 0)
    return 0;
  // STREAMINFO byte 13 low nibble + bytes 14..17: the 36-bit total sample count.
  const base = 8;
  return (bytes[base + 13]! & 0x0f) * 2 ** 32 + new DataView(bytes.buffer, bytes.byteOffset).getUint32(base + 14);
}

async function decodeCompressed(format: Exclude<UploadFormat, 'wav'>, bytes: Uint8Array, limits: AudioLimits) {
  const decoder = await DECODERS[format]();
  const parts: Float32Array[][] = [];
  let sampleRate = 0;
  let frames = 0;
  const take = (result: { channelData: Float32Array[]; sampleRate: number }) => {
    if (result.channelData.length === 0 || result.channelData[0]!.length === 0) return;
    sampleRate = result.sampleRate;
    frames += result.channelData[0]!.length;
    checkStream(format, sampleRate, result.channelData.length, frames, limits);
    parts.push(result.channelData);
  };
  try {
    for (let offset = 0; offset < bytes.length; offset += CHUNK_BYTES) {
      take(await decoder(bytes.subarray(offset, offset + CHUNK_BYTES)));
    }
    take(await decoder());
  } catch (error) {
    decoder.free();
    if (error instanceof DramaError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new DramaError('AUDIO_CORRUPT', `could not decode the ${format} upload: ${reason}`, {
      param: 'audio',
      cause: error,
    });
  }
  if (frames === 0)
    throw new DramaError('AUDIO_EMPTY', `the ${format} upload holds no decodable audio`, { param: 'audio' });
  const declared = format === 'flac' ? flacDeclaredFrames(bytes) : 0;
  if (declared > frames) {
    throw new DramaError('AUDIO_TRUNCATED', `FLAC file declares ${declared} samples but only ${frames} decode`, {
      param: 'audio',
    });
  }
  const mono = new Float32Array(frames);
  let offset = 0;
  for (const channels of parts) {
    mono.set(downmix(channels), offset);
    offset += channels[0]!.length;
  }
  return { sampleRate, samples: mono };
}

/** Decodes an uploaded file to mono float32; every refusal is a DramaError with an AUDIO_* code. */
export async function decodeUpload(bytes: Uint8Array, limits: AudioLimits = UPLOAD_LIMITS): Promise<DecodedAudio> {
  if (bytes.length === 0)
    throw new DramaError('AUDIO_EMPTY', 'the audio upload is empty (0 bytes)', { param: 'audio' });
  if (bytes.length > limits.maxBytes) {
    throw new DramaError(
      'AUDIO_TOO_LARGE',
      `the audio upload is ${bytes.length} bytes; at most ${limits.maxBytes} are accepted`,
      {
        kind: 'too_large',
        param: 'audio',
      },
    );
  }
  const format = sniffUploadFormat(bytes);
  if (format === undefined) {
    throw new DramaError(
      'AUDIO_UNKNOWN_FORMAT',
      'the audio upload is not wav, mp3, flac, ogg (vorbis/opus), aac or m4a',
      {
        param: 'audio',
      },
    );
  }
  if (format === 'wav') {
    const wav = readWav(bytes, limits);
    return { sampleRate: wav.sampleRate, samples: downmix(wav.channels) };
  }
  const decoded = await decodeCompressed(format, bytes, limits);
  return decoded;
}
