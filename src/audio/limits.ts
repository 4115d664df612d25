// Limits on uploaded audio (reference voices). Each refusal names its limit and the numbers that broke it.

export interface AudioLimits {
  /** Largest upload in bytes. */
  readonly maxBytes: number;
  /** Longest decoded duration in seconds. */
  readonly maxDurationSeconds: number;
  /** Most channels accepted before the downmix to mono. */
  readonly maxChannels: number;
  /** Lowest and highest sample rates accepted (Hz). */
  readonly minSampleRate: number;
  readonly maxSampleRate: number;
}

export const UPLOAD_LIMITS: AudioLimits = {
  maxBytes: 10 * 1024 * 1024,
  maxDurationSeconds: 600,
  maxChannels: 2,
  minSampleRate: 8000,
  maxSampleRate: 192000,
};
