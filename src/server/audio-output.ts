// Engine PCM (mono fp32 at 44100 Hz) → the bytes of one reply: resample to the requested rate, then encode. The
// encoder says whether its bytes can be sent as they come (`streamable`) or only whole at the end.
import type { SpeechFormat } from './schemas.ts';

export interface AudioEncoder {
  readonly streamable: boolean;
  push(pcm: Float32Array): Uint8Array;
  finish(): Uint8Array;
}

export interface Resampler {
  push(pcm: Float32Array): Float32Array;
  flush(): Float32Array;
}

/** The audio module's factories, passed in so that tests and the server share one wiring. */
export interface AudioToolkit {
  createEncoder(format: SpeechFormat, sampleRate: number, bitrate?: number): Promise<AudioEncoder>;
  createResampler(from: number, to: number): Resampler;
  contentType(format: SpeechFormat): string;
}

export interface AudioOutput {
  readonly contentType: string;
  readonly sampleRate: number;
  readonly streamable: boolean;
  /** Encodes the next native-rate PCM; may return no bytes yet. */
  push(pcm: Float32Array): Uint8Array;
  /** Flushes resampler and encoder: the last bytes of the reply. */
  finish(): Uint8Array;
}

function join(first: Uint8Array, second: Uint8Array): Uint8Array {
  if (first.length === 0) return second;
  if (second.length === 0) return first;
  const joined = new Uint8Array(first.length + second.length);
  joined.set(first);
  joined.set(second, first.length);
  return joined;
}

export async function openAudioOutput(
  toolkit: AudioToolkit,
  format: SpeechFormat,
  nativeRate: number,
  sampleRate: number,
  bitrate?: number,
): Promise<AudioOutput> {
  const encoder = await toolkit.createEncoder(format, sampleRate, bitrate);
  const resampler = sampleRate === nativeRate ? undefined : toolkit.createResampler(nativeRate, sampleRate);
  return {
    contentType: toolkit.contentType(format),
    sampleRate,
    streamable: encoder.streamable,
    push: (pcm) => encoder.push(resampler === undefined ? pcm : resampler.push(pcm)),
    finish: () => join(resampler === undefined ? new Uint8Array(0) : encoder.push(resampler.flush()), encoder.finish()),
  };
}

/** A whole WAV reply gets its true sizes (streams carry the streaming sizes, which some readers reject). */
export function completeWholeFile(format: SpeechFormat, bytes: Buffer): Buffer {
  if (format !== 'wav' || bytes.length < 44 || bytes.toString('latin1', 36, 40) !== 'data') return bytes;
  bytes.writeUInt32LE(bytes.length - 8, 4);
  bytes.writeUInt32LE(bytes.length - 44, 40);
  return bytes;
}
