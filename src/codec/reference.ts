// Reference audio → frames, as the model's prompt expects them: downmix to mono (channel mean, src/audio/decode.ts),
// resample to the codec rate with torchaudio's sinc resampler (src/audio/resample.ts), then encode. Input channels are
// float32 in [-1, 1].
import { join } from 'node:path';
import { downmix } from '../audio/decode.ts';
import { resample } from '../audio/resample.ts';
import { DramaError } from '../errors.ts';
import type { Frame } from '../model/types.ts';
import { loadCheckpointCodecConfig } from './checkpoint-codec.ts';
import { CODEC_FILE_NAME, Codec } from './codec.ts';

/** Audio at any rate and channel count → mono at the codec's rate, as every encoder (cpu or CUDA) takes it. */
export function referencePcm(channels: readonly Float32Array[], sampleRate: number, codecRate: number): Float32Array {
  if (channels.length === 0)
    throw new DramaError('AUDIO_NO_CHANNELS', 'reference audio has no channels', { param: 'audio' });
  const mono = downmix(channels);
  return sampleRate === codecRate ? mono : resample(mono, sampleRate, codecRate);
}

/** Audio at any rate and channel count → the codec's frames. */
export function encodeReferenceAudio(codec: Codec, channels: readonly Float32Array[], sampleRate: number): Frame[] {
  return codec.encode(referencePcm(channels, sampleRate, codec.config.sampleRate));
}

/** The codec of a checkpoint folder: `codec_config` from its config.json (absent → the real codec), then codec.pth. */
export async function loadCheckpointCodec(dir: string): Promise<Codec> {
  return Codec.load(join(dir, CODEC_FILE_NAME), await loadCheckpointCodecConfig(dir));
}
