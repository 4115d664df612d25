// Decoding of uploaded audio (reference voices): wav (own reader), mp3, flac, ogg vorbis/opus, aac (ADTS or
// m4a) through audio-decode. Output: mono float32 at the file's own rate (channels averaged).
// Compressed files are fed to the decoder in small chunks and each chunk's samples are counted as they come, so the
// duration limit stops a file as soon as its *decoded* length passes it: a small file that expands to hours (FLAC
// silence packs thousands of samples into a byte) never grows in memory past the limit and one chunk. What the
// decoder libraries print while decoding is captured: a corrupt upload gets one named error, not a flood on stderr.
import decodeAudio from 'audio-decode';
import { DramaError } from '../errors.ts';
import { splitFlacFrames } from './flac-split.ts';
import { type AudioLimits, UPLOAD_LIMITS } from './limits.ts';
import { sniffUploadFormat, type UploadFormat } from './sniff.ts';
import { readWav } from './wav.ts';

export interface DecodedAudio {
  readonly sampleRate: number;
  /** Mono samples in [-1, 1]. */
  readonly samples: Float32Array;
}

/** Input chunk of the streaming decoders (mp3, ogg, aac): small, so one chunk never expands far past the limit. */
const CHUNK_BYTES = 512;
/** Samples in one run of whole FLAC frames fed at once (about a second; the FLAC decoder needs whole frames). */
const FLAC_RUN_SAMPLES = 48000;
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

type Decoded = { channelData: Float32Array[]; sampleRate: number };

/** Starts one decoder call with the console captured: the libraries print from inside the call, synchronously. */
function capturingConsole(call: () => Promise<Decoded>, printed: string[]): Promise<Decoded> {
  const saved = { error: console.error, warn: console.warn, log: console.log };
  const capture = (...items: unknown[]) => void printed.push(items.map(String).join(' '));
  console.error = console.warn = console.log = capture;
  try {
    return call();
  } finally {
    Object.assign(console, saved);
  }
}

/** The decoder's input in pieces that expand to a bounded number of samples each. */
function* inputChunks(format: Exclude<UploadFormat, 'wav'>, bytes: Uint8Array): Generator<Uint8Array> {
  const native = format === 'flac' && String.fromCharCode(...bytes.subarray(0, 4)) !== 'OggS';
  for (const run of native ? splitFlacFrames(bytes, FLAC_RUN_SAMPLES) : [{ bytes, samples: 0 }]) {
    // Whole frames go in at once; bytes that did not parse as frames go in small pieces.
    if (run.samples > 0) yield run.bytes;
    else
      for (let offset = 0; offset < run.bytes.length; offset += CHUNK_BYTES)
        yield run.bytes.subarray(offset, offset + CHUNK_BYTES);
  }
}

async function decodeCompressed(format: Exclude<UploadFormat, 'wav'>, bytes: Uint8Array, limits: AudioLimits) {
  const decoder = await DECODERS[format]();
  const parts: Float32Array[] = [];
  const printed: string[] = [];
  let sampleRate = 0;
  let frames = 0;
  const take = (result: Decoded) => {
    if (result.channelData.length === 0 || result.channelData[0]!.length === 0) return;
    sampleRate = result.sampleRate;
    frames += result.channelData[0]!.length;
    checkStream(format, sampleRate, result.channelData.length, frames, limits);
    parts.push(downmix(result.channelData));
  };
  const corrupt = (reason: string, cause?: unknown) =>
    new DramaError('AUDIO_CORRUPT', `could not decode the ${format} upload: ${reason}`, { param: 'audio', cause });
  try {
    for (const chunk of inputChunks(format, bytes)) take(await capturingConsole(() => decoder(chunk), printed));
    take(await capturingConsole(() => decoder(), printed));
  } catch (error) {
    decoder.free();
    if (error instanceof DramaError) throw error;
    throw corrupt(error instanceof Error ? error.message : String(error), error);
  }
  if (printed.length > 0) {
    const more = printed.length > 1 ? ` (and ${printed.length - 1} more decoder messages)` : '';
    throw corrupt(`${printed[0]!.slice(0, 200)}${more}`);
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
  for (const part of parts) {
    mono.set(part, offset);
    offset += part.length;
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
