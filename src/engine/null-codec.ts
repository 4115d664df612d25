// A codec with no arithmetic, for scheduler and server tests: each frame becomes frameLength samples of a quiet tone
// whose pitch follows code[0]. Phase is carried across pushes, so chunked decode equals one whole decode.
import type { CodecStream, Frame } from '../model/types.ts';
import type { EngineCodec } from './runtime.ts';

export class NullCodec implements EngineCodec {
  readonly sampleRate = 44100;
  readonly frameLength = 2048;

  openStream(): CodecStream {
    const { sampleRate, frameLength } = this;
    let phase = 0;
    return {
      push(frames: readonly Frame[]): Float32Array {
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
