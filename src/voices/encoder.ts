// Uploaded reference audio (a catalog voice or a request's one-off reference) → the codec's frames. The transcript is
// checked like input text first; the file is decoded by the audio module (which refuses bad, empty or unknown files
// by name and stops as soon as the decoded audio passes the longest usable reference), downmixed, resampled to
// 44.1 kHz and encoded. The null runtime (tests) has no codec: its frames follow from the samples, one per 2048
// samples at 44.1 kHz. Both run in the encoder's own thread (encoder-thread.ts): an upload never blocks HTTP or the
// engine's frame rounds.
import { decodeUpload } from '../audio/decode.ts';
import { UPLOAD_LIMITS } from '../audio/limits.ts';
import { resample } from '../audio/resample.ts';
import { sniffUploadFormat, type UploadFormat } from '../audio/sniff.ts';
import { REAL_CODEC_CONFIG } from '../codec/config.ts';
import { DramaError, isDramaError } from '../errors.ts';
import type { Frame } from '../model/types.ts';
import { hashedFrame, mix32 } from '../shared/hashed-frame.ts';
import { refuseNullStructuralTokens } from '../text/null-structural.ts';
import { type EncodedUpload, EncoderThread, type VoiceEncoderSource } from './encoder-thread.ts';
import { checkVoiceAudioSize, checkVoiceFrames, MAX_VOICE_FRAMES, voiceSeconds } from './names.ts';

export interface VoiceEncoder {
  /** Refuses a transcript with structural tokens, then decodes and encodes the audio, off the calling thread. */
  encode(audio: Uint8Array, text: string): Promise<EncodedUpload>;
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

/** What encodes uploads in the encoder's thread: the checkpoint's codec and tokenizer, or the null runtime's. */
export interface UploadCodec {
  /** Throws a named error when the transcript holds structural tokens (param `text`). */
  checkTranscript(text: string): void;
  frames(samples: Float32Array, sampleRate: number): Frame[];
}

/** Decoding stops one frame past the longest reference the prompt takes; a longer file is refused as it decodes. */
const REFERENCE_AUDIO_LIMITS = { ...UPLOAD_LIMITS, maxDurationSeconds: voiceSeconds(MAX_VOICE_FRAMES + 1) };

/** Checks the transcript, decodes the upload and hands its mono samples to the codec. */
export async function encodeUpload(audio: Uint8Array, text: string, codec: UploadCodec): Promise<EncodedUpload> {
  codec.checkTranscript(text);
  checkVoiceAudioSize(audio.length);
  const decoded = await decodeUpload(audio, REFERENCE_AUDIO_LIMITS).catch((error: unknown) => {
    if (!isDramaError(error) || error.code !== 'AUDIO_TOO_LONG') throw error;
    const limit = `a reference is at most ${MAX_VOICE_FRAMES} frames (${voiceSeconds(MAX_VOICE_FRAMES).toFixed(1)} s)`;
    throw new DramaError('VOICE_AUDIO_TOO_LONG', `${error.message}: ${limit}`, { param: 'audio', cause: error });
  });
  // A recording too long to be a reference is refused before the expensive encode.
  const expectedFrames = Math.floor((decoded.samples.length * NATIVE_RATE) / decoded.sampleRate / FRAME_LENGTH);
  if (expectedFrames > MAX_VOICE_FRAMES) checkVoiceFrames(expectedFrames);
  const frames = codec.frames(decoded.samples, decoded.sampleRate);
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

/** The null runtime's upload codec: its text front end's structural tokens, hashed frames. */
export const NULL_UPLOAD_CODEC: UploadCodec = {
  checkTranscript: (text) => refuseNullStructuralTokens(text, 'text'),
  frames: nullFrames,
};

/** The encoder for a runtime: its upload codec in its own thread, started on first use. */
export function voiceEncoderFor(runtime: VoiceEncoderSource | Promise<VoiceEncoderSource>): VoiceEncoder {
  let thread: EncoderThread | undefined;
  return {
    async encode(audio, text) {
      thread ??= new EncoderThread(await runtime);
      return thread.encode(audio, text);
    },
    close: async () => thread?.close(),
  };
}
