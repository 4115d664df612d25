// A codec with no arithmetic, for scheduler and server tests: each frame becomes frameLength samples of a quiet tone
// whose pitch follows code[0]. Phase is carried across pushes, so chunked decode equals one whole decode.
import type { CodecStream, Frame } from '../model/types.ts';
import type { EngineCodec } from './runtime.ts';

export interface NullCodecOptions {
  /** Time each decoded frame takes, to make a decode backlog observable in tests; blocks the calling thread. */
  readonly frameMilliseconds?: number;
}

export class NullCodec implements EngineCodec {
  readonly sampleRate = 44100;
  readonly frameLength = 2048;

  constructor(private readonly options: NullCodecOptions = {}) {}

  openStream(): CodecStream {
    const { sampleRate, frameLength } = this;
    const delay = this.options.frameMilliseconds ?? 0;
    let phase = 0;
    return {
      push(frames: readonly Frame[]): Float32Array {
        if (delay > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, delay * frames.length);
        const pcm = new Float32Array(frames.length * frameLength);
        frames.forEach((frame, index) => {
          const frequency = 110 + (frame[0]! % 64) * 10;
          const step = (2 * Math.PI * frequency) / sampleRate;
          for (let sample = 0; sample < frameLength; sample++) {
            pcm[index * frameLength + sample] = 0.25 * Math.sin(phase);
            phase = (phase + step) % (2 * Math.PI);
          }
        });
        return pcm;
      },
    };
  }
}
