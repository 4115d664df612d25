// Resampler equal to torchaudio.functional.resample(x, from, to) with its defaults, on mono float32 samples.
// y[j] = Σ_k kernel[p][k] · x[b·orig + k − width] with j = b·next + p; x is zero before 0 and after its end.
// Sums run in float64 over the float32 kernel and are rounded to float32 once.
// Streaming: `push` returns every output whose input window has fully arrived; `flush` treats the input as
// ended, pads with zeros as torchaudio does and stops at ceil(next · length / orig) outputs, so the
// concatenated pushes and flush equal one whole `resample` call sample for sample.
import { DramaError } from '../errors.ts';
import { concatSamples } from './pcm.ts';
import { checkSampleRate, type ResampleKernel, resampledLength, resampleKernel } from './resample-kernel.ts';

export interface Resampler {
  readonly fromRate: number;
  readonly toRate: number;
  /** Feeds input samples; returns the output samples that are now final (may be empty). */
  push(samples: Float32Array): Float32Array;
  /** Ends the input; returns the remaining output, up to torchaudio's output length. */
  flush(): Float32Array;
}

const EMPTY = new Float32Array(0);

/** Rates equal: torchaudio returns the waveform unchanged. */
class IdentityResampler implements Resampler {
  constructor(
    readonly fromRate: number,
    readonly toRate: number,
  ) {}
  push(samples: Float32Array): Float32Array {
    return samples.slice();
  }
  flush(): Float32Array {
    return EMPTY;
  }
}

class SincResampler implements Resampler {
  private readonly kernel: ResampleKernel;
  /** Input held for outputs still to come; buffer[0] is input sample `bufferStart`. */
  private buffer = new Float32Array(4096);
  private bufferStart = 0;
  private bufferLength = 0;
  private received = 0;
  private produced = 0;
  private finished = false;

  constructor(
    readonly fromRate: number,
    readonly toRate: number,
  ) {
    this.kernel = resampleKernel(fromRate, toRate);
  }

  push(samples: Float32Array): Float32Array {
    if (this.finished)
      throw new DramaError('AUDIO_RESAMPLER_FINISHED', 'Resampler.push after flush', { kind: 'internal' });
    this.append(samples);
    this.received += samples.length;
    // Outputs past ceil(next · received / orig) may fall beyond the final length; they wait for more input.
    return this.produce(resampledLength(this.received, this.kernel), false);
  }

  flush(): Float32Array {
    if (this.finished) return EMPTY;
    this.finished = true;
    return this.produce(resampledLength(this.received, this.kernel), true);
  }

  private append(samples: Float32Array): void {
    const needed = this.bufferLength + samples.length;
    if (needed > this.buffer.length) {
      const grown = new Float32Array(Math.max(needed, this.buffer.length * 2));
      grown.set(this.buffer.subarray(0, this.bufferLength));
      this.buffer = grown;
    }
    this.buffer.set(samples, this.bufferLength);
    this.bufferLength = needed;
  }

  private produce(limit: number, final: boolean): Float32Array {
    const { orig, next, width, firstTap, weightStart, tapCount, weights } = this.kernel;
    const outputs = new Float32Array(Math.max(0, limit - this.produced));
    // Locals in the loop: the hot path reads no object fields and divides once, not once an output.
    const { buffer, bufferStart, received } = this;
    const bufferEnd = bufferStart + this.bufferLength;
    let produced = this.produced;
    let block = Math.floor(produced / next);
    let phase = produced - block * next;
    let count = 0;
    while (produced < limit) {
      const first = block * orig + firstTap[phase]! - width;
      const taps = tapCount[phase]!;
      if (!final && first + taps > received) break;
      const start = weightStart[phase]!;
      let sum = 0;
      if (first >= bufferStart && first + taps <= bufferEnd) {
        const offset = first - bufferStart;
        for (let tap = 0; tap < taps; tap++) sum += weights[start + tap]! * buffer[offset + tap]!;
      } else {
        // Edges: the zero padding before the first sample and after the last.
        for (let tap = 0; tap < taps; tap++) {
          const index = first + tap;
          if (index >= bufferStart && index < bufferEnd) sum += weights[start + tap]! * buffer[index - bufferStart]!;
        }
      }
      outputs[count++] = sum;
      produced++;
      if (++phase === next) {
        phase = 0;
        block++;
      }
    }
    this.produced = produced;
    this.discardBefore(Math.floor(produced / next) * orig - width);
    return outputs.subarray(0, count);
  }

  /** Drops input no later output can read (the next block starts at or after `index`). */
  private discardBefore(index: number): void {
    const drop = Math.min(index - this.bufferStart, this.bufferLength);
    if (drop <= 0) return;
    this.buffer.copyWithin(0, drop, this.bufferLength);
    this.bufferStart += drop;
    this.bufferLength -= drop;
  }
}

/** A streaming resampler from `fromRate` to `toRate` (positive integer Hz). */
export function createResampler(fromRate: number, toRate: number): Resampler {
  checkSampleRate(fromRate, 'fromRate');
  checkSampleRate(toRate, 'toRate');
  if (fromRate === toRate) return new IdentityResampler(fromRate, toRate);
  return new SincResampler(fromRate, toRate);
}

/** torchaudio.functional.resample(samples, fromRate, toRate) for one mono signal. */
export function resample(samples: Float32Array, fromRate: number, toRate: number): Float32Array {
  const resampler = createResampler(fromRate, toRate);
  return concatSamples([resampler.push(samples), resampler.flush()]);
}
