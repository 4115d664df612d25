// Text-side admission limits (MODEL.md §7). Bytes (UTF-8), code points and tokens are separate quantities: a request
// may be refused by any one of them, and each refusal names its quantity and both numbers.
import { DramaError } from '../errors.ts';

export interface TextLimits {
  /** UTF-8 bytes of the text to speak, as received. */
  readonly maxTextBytes: number;
  /** Unicode code points of the text to speak, as received. */
  readonly maxTextCodePoints: number;
  /** Tokens of the user message content (speaker tags, direction and text, after normalisation). */
  readonly maxTextTokens: number;
  /** References in one request. */
  readonly maxReferences: number;
  /** UTF-8 bytes of one reference transcript. */
  readonly maxTranscriptBytes: number;
  /** Code rows (audio frames, 21.533 per second) of one reference. */
  readonly maxReferenceFrames: number;
  /** UTF-8 bytes of the optional direction (`instructions`). */
  readonly maxInstructionBytes: number;
}

export const DEFAULT_TEXT_LIMITS: TextLimits = {
  maxTextBytes: 16384,
  maxTextCodePoints: 4096,
  maxTextTokens: 4096,
  maxReferences: 4,
  maxTranscriptBytes: 4096,
  // About 95 seconds of reference audio.
  maxReferenceFrames: 2048,
  maxInstructionBytes: 1024,
};

/** Defaults overridden by whatever the engine or server passes. */
export function resolveTextLimits(overrides: Partial<TextLimits> = {}): TextLimits {
  return { ...DEFAULT_TEXT_LIMITS, ...overrides };
}

/**
 * A piece's text limits for an engine that admits `maxInputCodePoints` code points of input: the defaults, raised with
 * it when it is larger (a UTF-8 code point is at most 4 bytes; text tokens are counted against the same number), so
 * that an operator who raises the input limit can fill the context window with one prompt.
 */
export function pieceTextLimits(maxInputCodePoints: number): Partial<TextLimits> {
  if (maxInputCodePoints <= DEFAULT_TEXT_LIMITS.maxTextCodePoints) return {};
  return {
    maxTextCodePoints: maxInputCodePoints,
    maxTextBytes: 4 * maxInputCodePoints,
    maxTextTokens: maxInputCodePoints,
  };
}

export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

export function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/** Refuses text over its byte or code point limit (checked on the text as received, before normalisation). */
export function checkTextSize(text: string, limits: TextLimits, param: string): void {
  const bytes = utf8Bytes(text);
  if (bytes > limits.maxTextBytes) {
    throw new DramaError(
      'TEXT_TOO_MANY_BYTES',
      `${param} is ${bytes} UTF-8 bytes; the limit is ${limits.maxTextBytes} bytes`,
      { param },
    );
  }
  const points = codePoints(text);
  if (points > limits.maxTextCodePoints) {
    throw new DramaError(
      'TEXT_TOO_MANY_CODE_POINTS',
      `${param} is ${points} code points; the limit is ${limits.maxTextCodePoints} code points`,
      { param },
    );
  }
}

export function checkTextTokens(tokens: number, limits: TextLimits, param: string): void {
  if (tokens > limits.maxTextTokens) {
    throw new DramaError(
      'TEXT_TOO_MANY_TOKENS',
      `${param} is ${tokens} tokens; the limit is ${limits.maxTextTokens} tokens`,
      { param },
    );
  }
}
