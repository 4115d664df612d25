// `pcm`: raw signed 16-bit little-endian mono samples, no header; streams as it goes.

import { floatToPcm16 } from '../pcm.ts';
import { type AudioEncoder, type AudioEncoderOptions, checkEncoderRate, finishOnce } from './common.ts';

export function createPcmEncoder(options: AudioEncoderOptions): AudioEncoder {
  checkEncoderRate('pcm', options.sampleRate);
  return finishOnce(
    { format: 'pcm', sampleRate: options.sampleRate, streamable: true },
    { push: floatToPcm16, finish: () => new Uint8Array(0) },
  );
}
