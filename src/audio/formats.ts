// The audio formats a reply can be encoded in, and the Content-Type each one is served with.
import { SAMPLE_RATE } from '../shared/frame.ts';

export type AudioFormat = 'mp3' | 'opus' | 'aac' | 'flac' | 'wav' | 'pcm';

export const AUDIO_FORMATS: readonly AudioFormat[] = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'];

export const CONTENT_TYPES: Record<AudioFormat, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/ogg; codecs=opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

/** The model's native output rate; every format but `pcm` on the OpenAI route defaults to it. */
export const NATIVE_SAMPLE_RATE = SAMPLE_RATE;

/** OpenAI's contract for `pcm`: 24 kHz signed 16-bit little-endian mono. */
export const PCM_DEFAULT_SAMPLE_RATE = 24000;
