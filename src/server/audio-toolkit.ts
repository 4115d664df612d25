// The server's audio toolkit: the audio module's encoders, torchaudio-equal resampler and content types.
import { createAudioEncoder } from '../audio/encoder.ts';
import { CONTENT_TYPES } from '../audio/formats.ts';
import { createResampler } from '../audio/resample.ts';
import type { AudioToolkit } from './audio-output.ts';

export const audioToolkit: AudioToolkit = {
  createEncoder: (format, sampleRate, bitrate) =>
    createAudioEncoder(format, bitrate === undefined ? { sampleRate } : { sampleRate, bitrate }),
  createResampler,
  contentType: (format) => CONTENT_TYPES[format],
};
