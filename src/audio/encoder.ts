// The streaming audio encoder factory: one implementation per AudioFormat (interface in encoders/common.ts).
// Input is mono float32 in [-1, 1] at `sampleRate` (the caller resamples first); output is the format's bytes.
import { DramaError } from '../errors.ts';
import type { AudioEncoder, AudioEncoderOptions } from './encoders/common.ts';
import type { AudioFormat } from './formats.ts';

/** Creates the encoder for `format`; codec libraries load on first use. */
export async function createAudioEncoder(format: AudioFormat, options: AudioEncoderOptions): Promise<AudioEncoder> {
  switch (format) {
    case 'pcm':
      return (await import('./encoders/pcm.ts')).createPcmEncoder(options);
    case 'wav':
      return (await import('./encoders/wav.ts')).createWavEncoder(options);
    case 'mp3':
      return (await import('./encoders/mp3.ts')).createMp3Encoder(options);
    case 'opus':
      return (await import('./encoders/opus.ts')).createOpusEncoder(options);
    case 'flac':
      return (await import('./encoders/flac.ts')).createFlacEncoder(options);
    case 'aac':
      return (await import('./encoders/aac.ts')).createAacEncoder(options);
    default:
      throw new DramaError('AUDIO_FORMAT_UNSUPPORTED', `unknown audio format ${String(format)}`, {
        param: 'response_format',
      });
  }
}
