// Uploaded voice audio → the codec's frames, once per upload. The file is decoded by the audio module (which refuses
// bad, empty, too long or unknown files by name), downmixed, resampled to 44.1 kHz and encoded. The null runtime
// (tests) has no codec: its encoder derives deterministic frames from the samples, one per 2048 samples at 44.1 kHz.
// A checkpoint's codec runs in its own thread (encoder-thread.ts), so that an upload never blocks HTTP.
import { decodeUpload } from '../audio/decode.ts';
import { resample } from '../audio/resample.ts';
import { sniffUploadFormat, type UploadFormat } from '../audio/sniff.ts';
import { REAL_CODEC_CONFIG } from '../codec/config.ts';
import { DramaError } from '../errors.ts';
import type { Frame } from '../model/types.ts';
import { hashedFrame, mix32 } from '../shared/hashed-frame.ts';
import { type EncodedUpload, EncoderThread } from './encoder-thread.ts';
import { checkVoiceAudioSize, checkVoiceFrames, MAX_VOICE_FRAMES } from './names.ts';

export interface VoiceEncoder {
  encode(audio: Uint8Array): Promise<EncodedUpload>;
  /** Stops the encoder's thread, if it started one. */
  close(): Promise<void>;
}

const EXTENSIONS: Record<UploadFormat, string> = {
  wav: 'wav',
  mp3: 'mp3',
  flac: 'flac',
  opus: 'ogg',
  vorbis: 'ogg',
  aac: 'aac',
  m4a: 'm4a',
};
/** The codec's rate and frame: an upload's length is checked against them, and null frames follow them. */
const { sampleRate: NATIVE_RATE, frameLength: FRAME_LENGTH } = REAL_CODEC_CONFIG;

/** Decodes the upload and hands its mono samples to `encode`. */
export async function encodeUpload(
  audio: Uint8Array,
  encode: (samples: Float32Array, sampleRate: number) => Frame[],
): Promise<EncodedUpload> {
  checkVoiceAudioSize(audio.length);
  const decoded = await decodeUpload(audio);
  // A recording too long to be a reference is refused before the expensive encode.
  const expectedFrames = Math.floor((decoded.samples.length * NATIVE_RATE) / decoded.sampleRate / FRAME_LENGTH);
  if (expectedFrames > MAX_VOICE_FRAMES) checkVoiceFrames(expectedFrames);
  const frames = encode(decoded.samples, decoded.sampleRate);
  if (frames.length === 0) {
    throw new DramaError(
      'VOICE_AUDIO_TOO_SHORT',
      `the voice audio (${decoded.samples.length} samples at ${decoded.sampleRate} Hz) is shorter than one frame`,
      { param: 'audio' },
    );
  }
  return { frames, extension: EXTENSIONS[sniffUploadFormat(audio)!] };
}

/** Frames of the null runtime: code k of frame f hashes the frame's samples, so different audio gives other codes. */
function nullFrames(samples: Float32Array, sampleRate: number): Frame[] {
  const native = sampleRate === NATIVE_RATE ? samples : resample(samples, sampleRate, NATIVE_RATE);
  const frames: Frame[] = [];
  for (let start = 0; start + FRAME_LENGTH <= native.length; start += FRAME_LENGTH) {
    let hash = frames.length;
    for (let index = start; index < start + FRAME_LENGTH; index += 64)
      hash = mix32(hash ^ Math.round(native[index]! * 32767));
    frames.push(hashedFrame(hash));
  }
  return frames;
}

/** Where a runtime's frames come from, as the voice encoder needs it: the null runtime, or a checkpoint folder. */
export type VoiceEncoderSource = { readonly kind: 'null' } | { readonly kind: 'checkpoint'; readonly dir: string };

/** The encoder for a runtime: the checkpoint's codec in its own thread (started on first use), or the null runtime's. */
export function voiceEncoderFor(runtime: VoiceEncoderSource | Promise<VoiceEncoderSource>): VoiceEncoder {
  let thread: EncoderThread | undefined;
  return {
    async encode(audio) {
      const spec = await runtime;
      if (spec.kind === 'null') return encodeUpload(audio, nullFrames);
      thread ??= new EncoderThread(spec.dir);
      return thread.encode(audio);
    },
    close: async () => thread?.close(),
  };
}
