// `wav`: 16-bit PCM mono. The header goes out with the first bytes and carries streaming sizes (0xFFFFFFFF),
// since the length is unknown until the end; decoders read such files to their end.

import { concatBytes } from '../pcm.ts';
import { wavHeader, wavSampleBytes } from '../wav.ts';
import { type AudioEncoder, type AudioEncoderOptions, checkEncoderRate, finishOnce } from './common.ts';

export function createWavEncoder(options: AudioEncoderOptions): AudioEncoder {
  checkEncoderRate('wav', options.sampleRate);
  let headerSent = false;
  const header = (): Uint8Array => {
    if (headerSent) return new Uint8Array(0);
    headerSent = true;
    return wavHeader(options.sampleRate, 16);
  };
  return finishOnce(
    { format: 'wav', sampleRate: options.sampleRate, streamable: true },
    {
      push(pcm) {
        return concatBytes([header(), wavSampleBytes(pcm, 16)]);
      },
      finish() {
        return header();
      },
    },
  );
}
