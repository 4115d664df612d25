// What every streaming audio encoder implements and shares: the interface, option checks, and the guard that refuses
// use after the end. Input is mono float32 in [-1, 1] at `sampleRate` (the caller resamples first).
import { DramaError } from '../../errors.ts';
import type { AudioFormat } from '../formats.ts';

export interface AudioEncoder {
  readonly format: AudioFormat;
  readonly sampleRate: number;
  /** True when `push` returns playable bytes as it goes; false when everything comes from `finish`. */
  readonly streamable: boolean;
  /** Encodes more samples; returns the bytes ready now (may be empty). */
  push(pcm: Float32Array): Uint8Array;
  /** Ends the stream; returns the remaining bytes. The encoder is unusable afterwards. */
  finish(): Uint8Array;
  /** finish() for a server: an encoder in another thread is awaited instead of blocking this thread's event loop. */
  finishAsync(): Promise<Uint8Array>;
  /** Drops the stream without output and frees what it holds; no-op once finished or aborted, unusable afterwards. */
  abort(): void;
}

export interface AudioEncoderOptions {
  /** Rate of the samples given to `push`, in Hz. */
  readonly sampleRate: number;
  /** Target bit rate in bits per second (mp3, opus, aac); each format has a default. */
  readonly bitrate?: number;
}

export function checkEncoderRate(format: AudioFormat, sampleRate: number, allowed?: readonly number[]): void {
  const valid = Number.isInteger(sampleRate) && sampleRate >= 1 && sampleRate <= 768000;
  if (!valid || (allowed !== undefined && !allowed.includes(sampleRate))) {
    const choices = allowed === undefined ? 'an integer from 1 to 768000 Hz' : `one of ${allowed.join(', ')} Hz`;
    throw new DramaError(
      'AUDIO_SAMPLE_RATE_UNSUPPORTED',
      `${format} cannot be encoded at ${sampleRate} Hz; use ${choices}`,
      {
        param: 'sample_rate',
      },
    );
  }
}

export function checkEncoderBitrate(format: AudioFormat, bitrate: number, min: number, max: number): void {
  if (!Number.isFinite(bitrate) || bitrate < min || bitrate > max) {
    throw new DramaError(
      'AUDIO_BITRATE_UNSUPPORTED',
      `${format} bit rate ${bitrate} bit/s is outside ${min}–${max} bit/s`,
      { param: 'bitrate' },
    );
  }
}

/** The encoder `steps` describe, refusing any call after `finish` or `abort` (a bug in the caller). */
export function finishOnce(
  fields: Pick<AudioEncoder, 'format' | 'sampleRate' | 'streamable'>,
  steps: Pick<AudioEncoder, 'push' | 'finish'> & Partial<Pick<AudioEncoder, 'finishAsync' | 'abort'>>,
): AudioEncoder {
  let ended: 'finish()' | 'abort()' | undefined;
  const refuseAfterEnd = () => {
    if (ended !== undefined) {
      throw new DramaError('AUDIO_ENCODER_FINISHED', `${fields.format} encoder used after ${ended}`, {
        kind: 'internal',
      });
    }
  };
  return {
    ...fields,
    push(pcm) {
      refuseAfterEnd();
      return steps.push(pcm);
    },
    finish() {
      refuseAfterEnd();
      ended = 'finish()';
      return steps.finish();
    },
    finishAsync() {
      return new Promise((resolve, reject) => {
        refuseAfterEnd();
        ended = 'finish()';
        // An encoder in this thread has nothing to wait for: its finish runs now.
        if (steps.finishAsync === undefined) resolve(steps.finish());
        else steps.finishAsync().then(resolve, reject);
      });
    },
    abort() {
      if (ended !== undefined) return;
      ended = 'abort()';
      steps.abort?.();
    },
  };
}
