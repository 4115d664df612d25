// The server's audio toolkit: the audio module's resampler and content types, and its encoders.
import { CONTENT_TYPES } from '../audio/formats.ts';
import { floatToPcm16 } from '../audio/pcm.ts';
import { createResampler } from '../audio/resample.ts';
import { wavHeader } from '../audio/wav.ts';
import { DramaError } from '../errors.ts';
import type { AudioEncoder, AudioToolkit } from './audio-output.ts';

const EMPTY = new Uint8Array(0);

/** s16le PCM, optionally behind a WAV header with streaming sizes. */
function pcmEncoder(sampleRate: number, withHeader: boolean): AudioEncoder {
  let headerSent = !withHeader;
  return {
    streamable: true,
    push(pcm) {
      const samples = floatToPcm16(pcm);
      if (headerSent) return samples;
      headerSent = true;
      const bytes = new Uint8Array(44 + samples.length);
      bytes.set(wavHeader(sampleRate, 16), 0);
      bytes.set(samples, 44);
      return bytes;
    },
    finish() {
      if (headerSent) return EMPTY;
      headerSent = true;
      return wavHeader(sampleRate, 16);
    },
  };
}

export const audioToolkit: AudioToolkit = {
  async createEncoder(format, sampleRate) {
    if (format === 'pcm' || format === 'wav') return pcmEncoder(sampleRate, format === 'wav');
    throw new DramaError('FORMAT_UNAVAILABLE', `response_format ${format} has no encoder in this build`, {
      param: 'response_format',
    });
  },
  createResampler,
  contentType: (format) => CONTENT_TYPES[format],
};
