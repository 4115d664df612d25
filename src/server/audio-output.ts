// Engine PCM (mono fp32 at 44100 Hz) → the bytes of one reply: time-stretch (speed ≠ 1) and gain (volume ≠ 0 dB) at
// the native rate, resample to the requested rate, then encode. The encoder says whether its bytes can be sent as
// they come (`streamable`) or only whole at the end. A reply that ends without `finish` calls `abort`, which frees
// the encoder (an AAC job in its worker, a buffered FLAC signal).
import { concatBytes, concatSamples } from '../audio/pcm.ts';
import { TimeStretch } from '../audio/time-stretch.ts';
import type { SpeechFormat } from './schemas.ts';

export interface AudioEncoder {
  readonly streamable: boolean;
  push(pcm: Float32Array): Uint8Array;
  /** The last bytes; an encoder in another thread is awaited, never waited on (that would stall every reply). */
  finishAsync(): Promise<Uint8Array>;
  abort(): void;
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
  finish(): Promise<Uint8Array>;
  /** Ends a reply that will not be finished (client gone, synthesis failed): frees the encoder; no-op after finish. */
  abort(): void;
}

/** How one reply's audio is shaped before encoding. */
export interface OutputShape {
  readonly format: SpeechFormat;
  readonly sampleRate: number;
  readonly bitrate?: number;
  /** Playback speed, pitch kept; 1 leaves the samples untouched. */
  readonly speed?: number;
  /** Gain in dB; 0 leaves the samples untouched. */
  readonly volumeDb?: number;
}

export async function openAudioOutput(
  toolkit: AudioToolkit,
  nativeRate: number,
  shape: OutputShape,
): Promise<AudioOutput> {
  const { format, sampleRate } = shape;
  const encoder = await toolkit.createEncoder(format, sampleRate, shape.bitrate);
  const resampler = sampleRate === nativeRate ? undefined : toolkit.createResampler(nativeRate, sampleRate);
  const stretch = shape.speed === undefined || shape.speed === 1 ? undefined : new TimeStretch(shape.speed);
  const gain = shape.volumeDb === undefined || shape.volumeDb === 0 ? 1 : 10 ** (shape.volumeDb / 20);
  const shaped = (pcm: Float32Array) =>
    gain === 1 ? pcm : pcm.map((sample) => Math.max(-1, Math.min(1, sample * gain)));
  const resampled = (pcm: Float32Array) => (resampler === undefined ? pcm : resampler.push(pcm));
  return {
    contentType: toolkit.contentType(format),
    sampleRate,
    streamable: encoder.streamable,
    push: (pcm) => encoder.push(resampled(shaped(stretch === undefined ? pcm : stretch.push(pcm)))),
    async finish() {
      const tail = resampled(shaped(stretch === undefined ? new Float32Array(0) : stretch.flush()));
      const rest = resampler === undefined ? tail : concatSamples([tail, resampler.flush()]);
      const pushed = encoder.push(rest);
      return concatBytes([pushed, await encoder.finishAsync()]);
    },
    abort: () => encoder.abort(),
  };
}

/** A whole WAV reply gets its true sizes (streams carry the streaming sizes, which some readers reject). */
export function completeWholeFile(format: SpeechFormat, bytes: Buffer): Buffer {
  if (format !== 'wav' || bytes.length < 44 || bytes.toString('latin1', 36, 40) !== 'data') return bytes;
  bytes.writeUInt32LE(bytes.length - 8, 4);
  bytes.writeUInt32LE(bytes.length - 44, 40);
  return bytes;
}
