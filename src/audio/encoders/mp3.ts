// `mp3`: LAME (wasm-media-encoders) at a constant bit rate, mono; frames stream out as LAME completes them.
// LAME's own output buffer is reused between calls, so every result is copied.
import { createMp3Encoder as createLameEncoder } from 'wasm-media-encoders';
import { concatBytes } from '../pcm.ts';
import { type AudioEncoder, type AudioEncoderOptions, checkEncoderRate, finishOnce } from './common.ts';

/** The sample rates MPEG-1/2/2.5 layer III can carry. */
const MP3_SAMPLE_RATES = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000] as const;
const BITRATES_KBPS = [8, 16, 24, 32, 40, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320] as const;
const DEFAULT_BITRATE = 128_000;
/** Samples handed to LAME per call, so one big push does not build one big wasm buffer. */
const CHUNK_SAMPLES = 16384;

type Mp3Bitrate = (typeof BITRATES_KBPS)[number];
type Mp3SampleRate = (typeof MP3_SAMPLE_RATES)[number];

/** The nearest constant bit rate LAME offers; LAME moves it into the range the sample rate allows (MPEG-1: 32–320). */
function nearestBitrate(bitsPerSecond: number): Mp3Bitrate {
  let best: Mp3Bitrate = BITRATES_KBPS[0];
  for (const kbps of BITRATES_KBPS) {
    if (Math.abs(kbps * 1000 - bitsPerSecond) < Math.abs(best * 1000 - bitsPerSecond)) best = kbps;
  }
  return best;
}

export async function createMp3Encoder(options: AudioEncoderOptions): Promise<AudioEncoder> {
  checkEncoderRate('mp3', options.sampleRate, MP3_SAMPLE_RATES);
  const lame = await createLameEncoder();
  const sampleRate = options.sampleRate as Mp3SampleRate;
  // Without outputSampleRate LAME picks a lower rate for low bit rates; the reply must keep the rate asked for.
  lame.configure({
    sampleRate,
    outputSampleRate: sampleRate,
    channels: 1,
    bitrate: nearestBitrate(options.bitrate ?? DEFAULT_BITRATE),
  });
  return finishOnce(
    { format: 'mp3', sampleRate: sampleRate, streamable: true },
    {
      push(pcm) {
        const chunks: Uint8Array[] = [];
        for (let start = 0; start < pcm.length; start += CHUNK_SAMPLES) {
          chunks.push(lame.encode([pcm.subarray(start, start + CHUNK_SAMPLES)]).slice());
        }
        return concatBytes(chunks);
      },
      finish() {
        return lame.finalize().slice();
      },
    },
  );
}
