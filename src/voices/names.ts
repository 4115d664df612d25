// Voice names and the limits of one voice. A name is also its folder name and its id in the API, so it is checked
// before any path is built from it: letters, digits, '_', '-' and '.', not starting with '.', at most 64 characters.
import { REAL_CODEC_CONFIG } from '../codec/config.ts';
import { DramaError } from '../errors.ts';
import { DEFAULT_TEXT_LIMITS } from '../text/limits.ts';

/** Largest uploaded reference audio file (API.md: ≤ 10 MB). */
export const MAX_VOICE_AUDIO_BYTES = 10 * 1024 * 1024;
/** Longest transcript, in UTF-8 bytes (the prompt builder's reference transcript limit). */
const MAX_VOICE_TEXT_BYTES = DEFAULT_TEXT_LIMITS.maxTranscriptBytes;
/** Most encoded frames (the prompt builder's reference limit): a longer voice could never be spoken with. */
export const MAX_VOICE_FRAMES = DEFAULT_TEXT_LIMITS.maxReferenceFrames;
const MAX_VOICE_NAME_LENGTH = 64;

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/** Seconds of audio in `frames` frames of the codec (2048 samples at 44.1 kHz each). */
export function voiceSeconds(frames: number): number {
  return (frames * REAL_CODEC_CONFIG.frameLength) / REAL_CODEC_CONFIG.sampleRate;
}

/** Throws VOICE_NAME_INVALID unless `name` is safe as a folder name and an id. */
export function checkVoiceName(name: string, param = 'name'): string {
  if (name.length === 0) throw new DramaError('VOICE_NAME_INVALID', 'the voice name is empty', { param });
  if (name.length > MAX_VOICE_NAME_LENGTH) {
    throw new DramaError(
      'VOICE_NAME_INVALID',
      `the voice name is ${name.length} characters; at most ${MAX_VOICE_NAME_LENGTH} are allowed`,
      { param },
    );
  }
  if (!NAME_PATTERN.test(name) || name.includes('..')) {
    throw new DramaError(
      'VOICE_NAME_INVALID',
      `the voice name ${JSON.stringify(name)} may use only letters, digits, '_', '-' and '.', must not start with '.' and must not contain '..'`,
      { param },
    );
  }
  return name;
}

/** Throws unless the transcript is non-empty and within MAX_VOICE_TEXT_BYTES. */
export function checkVoiceText(text: string, param = 'text'): string {
  if (text.trim() === '') throw new DramaError('VOICE_TEXT_EMPTY', 'the voice transcript is empty', { param });
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_VOICE_TEXT_BYTES) {
    throw new DramaError(
      'VOICE_TEXT_TOO_LONG',
      `the voice transcript is ${bytes} UTF-8 bytes; at most ${MAX_VOICE_TEXT_BYTES} are allowed`,
      { param },
    );
  }
  return text;
}

/** Throws VOICE_AUDIO_TOO_SHORT (no frames) or VOICE_AUDIO_TOO_LONG (more than MAX_VOICE_FRAMES). */
export function checkVoiceFrames(frames: number, param = 'audio'): void {
  if (frames === 0) {
    throw new DramaError('VOICE_AUDIO_TOO_SHORT', 'the voice audio encodes to no frames (it is too short)', { param });
  }
  if (frames > MAX_VOICE_FRAMES) {
    const seconds = voiceSeconds(frames).toFixed(1);
    throw new DramaError(
      'VOICE_AUDIO_TOO_LONG',
      `the voice audio encodes to ${frames} frames (${seconds} s); at most ${MAX_VOICE_FRAMES} frames are usable as a reference`,
      { param },
    );
  }
}

/** Throws VOICE_AUDIO_TOO_LARGE (413) or VOICE_AUDIO_EMPTY for an upload's byte count. */
export function checkVoiceAudioSize(bytes: number, param = 'audio'): void {
  if (bytes === 0) throw new DramaError('VOICE_AUDIO_EMPTY', 'the voice audio file is empty (0 bytes)', { param });
  if (bytes > MAX_VOICE_AUDIO_BYTES) {
    throw new DramaError(
      'VOICE_AUDIO_TOO_LARGE',
      `the voice audio file is ${bytes} bytes; at most ${MAX_VOICE_AUDIO_BYTES} are accepted`,
      { kind: 'too_large', param },
    );
  }
}
