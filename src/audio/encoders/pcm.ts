// `pcm`: raw signed 16-bit little-endian mono samples, no header; streams as it goes.
import { type AudioEncoder, type AudioEncoderOptions, checkEncoderRate, encoderFinished } from '../encoder.ts';
import { floatToPcm16 } from '../pcm.ts';

export function createPcmEncoder(options: AudioEncoderOptions): AudioEncoder {
  checkEncoderRate('pcm', options.sampleRate);
  let finished = false;
  return {
    format: 'pcm',
    sampleRate: options.sampleRate,
    streamable: true,
    push(pcm) {
      if (finished) throw encoderFinished('pcm');
      return floatToPcm16(pcm);
    },
    finish() {
      if (finished) throw encoderFinished('pcm');
      finished = true;
      return new Uint8Array(0);
    },
  };
}
