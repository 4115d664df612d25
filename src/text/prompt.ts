// The reference-bracket-v1 prompt (MODEL.md §5) as rows: tokens [P] and codes [P, K=10] row-major, -1 on text rows.
// The whole layout lives in buildPrompt; the bracketing of references follows the public S2 lineage [guess]:
//   <|im_start|>system\n{SYSTEM}<|im_end|>\n                                         (no reference)
//   <|im_start|>system\n{SYSTEM_WITH_REFERENCES}<|speaker:a|>{t0}\n<|speaker:b|>{t1}\n\nSpeech:\n
//     {code rows of reference 0, then 1, ...}<|im_end|>\n                            (with references)
//   ── referenceRows: everything above is the invariant prefix; the row after it is text, so its lookahead is masked
//   <|im_start|>user\n<|speaker:s|>{[direction] }{text}...<|im_end|>\n<|im_start|>assistant\n<|voice|>
import { DramaError } from '../errors.ts';
import type { PromptRows } from '../model/types.ts';
import { CODES_PER_FRAME, RESIDUAL_CODEBOOK_SIZE } from '../shared/frame.ts';
import { checkTextSize, checkTextTokens, resolveTextLimits, type TextLimits, utf8Bytes } from './limits.ts';
import { normalizeText } from './normalize.ts';
import type { Tokenizer } from './tokenizer.ts';
import { parseSpeakerSegments, type SpeakerSegment } from './userText.ts';
import { SPEAKER_TAG_COUNT, speakerTag } from './vocabulary.ts';

const SYSTEM = 'convert the provided text to speech';
const SYSTEM_WITH_REFERENCES = 'convert the provided text to speech reference to the following:\n\nText:\n';
const REFERENCE_SPEECH = '\n\nSpeech:\n';

export interface PromptReference {
  /** What the reference audio says; may carry its own speaker tags. */
  readonly text: string;
  /** The reference's frames. [F, K=10] row-major. */
  readonly codes: Int32Array;
  /** Speaker of the transcript's untagged start; defaults to the reference's index. */
  readonly speaker?: number;
}

export interface PromptRequest {
  /** Text to speak; `<|speaker:N|>` tags make dialogue, untagged text starts as speaker 0. */
  readonly text: string;
  readonly references?: readonly PromptReference[];
  /** A direction such as "whispering, slowly", placed as `[direction]` before the text [guess]. */
  readonly instructions?: string;
  /** English normalisation of numbers, money, dates and units (default on). */
  readonly normalize?: boolean;
}

export interface BuiltPrompt extends PromptRows {
  /** Tokens of the user message content (what TEXT_TOO_MANY_TOKENS limits; reported as input tokens). */
  readonly textTokens: number;
}

export type PromptTokenizer = Pick<Tokenizer, 'encode' | 'tokenId' | 'semanticBegin' | 'semanticCount' | 'addedTokens'>;

const templateIds = new WeakMap<PromptTokenizer, Map<string, Int32Array>>();

/** Ids of one of our fixed layout strings, encoded once per tokenizer. */
function encodeTemplate(tokenizer: PromptTokenizer, template: string): Int32Array {
  let cache = templateIds.get(tokenizer);
  if (cache === undefined) {
    cache = new Map();
    templateIds.set(tokenizer, cache);
  }
  let ids = cache.get(template);
  if (ids === undefined) {
    ids = tokenizer.encode(template);
    cache.set(template, ids);
  }
  return ids;
}

class RowWriter {
  readonly tokens: number[] = [];
  readonly codes: number[] = [];

  text(ids: Int32Array | readonly number[]): void {
    for (const id of ids) {
      this.tokens.push(id);
      for (let k = 0; k < CODES_PER_FRAME; k++) this.codes.push(-1);
    }
  }

  frames(codes: Int32Array, semanticBegin: number): void {
    for (let row = 0; row < codes.length / CODES_PER_FRAME; row++) {
      this.tokens.push(semanticBegin + codes[row * CODES_PER_FRAME]!);
      for (let k = 0; k < CODES_PER_FRAME; k++) this.codes.push(codes[row * CODES_PER_FRAME + k]!);
    }
  }

  get length(): number {
    return this.tokens.length;
  }
}

function checkSpeaker(speaker: number, param: string): void {
  if (!Number.isInteger(speaker) || speaker < 0 || speaker >= SPEAKER_TAG_COUNT) {
    throw new DramaError('SPEAKER_OUT_OF_RANGE', `${param} is ${speaker}; speakers are 0..${SPEAKER_TAG_COUNT - 1}`, {
      param,
    });
  }
}

function checkReferenceCodes(codes: Int32Array, index: number, limits: TextLimits, semanticCount: number): void {
  const param = `references[${index}].codes`;
  if (codes.length % CODES_PER_FRAME !== 0) {
    throw new DramaError(
      'REFERENCE_CODES_MALFORMED',
      `${param} has ${codes.length} values, not a multiple of ${CODES_PER_FRAME} codes per frame`,
      { param },
    );
  }
  const frames = codes.length / CODES_PER_FRAME;
  if (frames === 0) throw new DramaError('REFERENCE_EMPTY', `${param} has no frames`, { param });
  if (frames > limits.maxReferenceFrames) {
    throw new DramaError(
      'REFERENCE_TOO_LONG',
      `reference ${index} is ${frames} frames; the limit is ${limits.maxReferenceFrames} frames`,
      { param },
    );
  }
  for (let i = 0; i < codes.length; i++) {
    const codebook = i % CODES_PER_FRAME;
    const size = codebook === 0 ? semanticCount : RESIDUAL_CODEBOOK_SIZE;
    if (codes[i]! < 0 || codes[i]! >= size) {
      throw new DramaError(
        'REFERENCE_CODE_OUT_OF_RANGE',
        `${param} frame ${Math.floor(i / CODES_PER_FRAME)} codebook ${codebook} is ${codes[i]}; valid codes are 0..${size - 1}`,
        { param },
      );
    }
  }
}

/** Segments with the default speaker filled in and, when asked, normalised text. */
function speakerSegments(
  text: string,
  defaultSpeaker: number,
  normalize: boolean,
  tokenizer: PromptTokenizer,
  param: string,
): { speaker: number; text: string }[] {
  return parseSpeakerSegments(text, tokenizer.addedTokens, param).map((segment: SpeakerSegment) => ({
    speaker: segment.speaker ?? defaultSpeaker,
    text: normalize ? normalizeText(segment.text) : segment.text,
  }));
}

export function buildPrompt(
  tokenizer: PromptTokenizer,
  request: PromptRequest,
  limitOverrides: Partial<TextLimits> = {},
): BuiltPrompt {
  const limits = resolveTextLimits(limitOverrides);
  const normalize = request.normalize ?? true;
  const references = request.references ?? [];
  if (references.length > limits.maxReferences) {
    throw new DramaError(
      'TOO_MANY_REFERENCES',
      `the request has ${references.length} references; the limit is ${limits.maxReferences}`,
      { param: 'references' },
    );
  }
  if (request.text.trim() === '') throw new DramaError('TEXT_EMPTY', 'text is empty', { param: 'text' });
  checkTextSize(request.text, limits, 'text');
  const segments = speakerSegments(request.text, 0, normalize, tokenizer, 'text');
  if (segments.every((segment) => segment.text.trim() === '')) {
    throw new DramaError('TEXT_EMPTY', 'text has speaker tags but nothing to speak', { param: 'text' });
  }
  const direction = request.instructions?.trim() ?? '';
  if (direction !== '') {
    const bytes = utf8Bytes(direction);
    if (bytes > limits.maxInstructionBytes) {
      throw new DramaError(
        'INSTRUCTIONS_TOO_LONG',
        `instructions are ${bytes} UTF-8 bytes; the limit is ${limits.maxInstructionBytes} bytes`,
        { param: 'instructions' },
      );
    }
    if (parseSpeakerSegments(direction, tokenizer.addedTokens, 'instructions').some((s) => s.speaker !== undefined)) {
      throw new DramaError('TEXT_STRUCTURAL_TOKEN', 'instructions cannot contain speaker tags', {
        param: 'instructions',
      });
    }
  }
  const transcripts = references.map((reference, index) => {
    const param = `references[${index}].text`;
    const bytes = utf8Bytes(reference.text);
    if (bytes > limits.maxTranscriptBytes) {
      throw new DramaError(
        'REFERENCE_TRANSCRIPT_TOO_LONG',
        `reference ${index} transcript is ${bytes} UTF-8 bytes; the limit is ${limits.maxTranscriptBytes} bytes`,
        { param },
      );
    }
    if (reference.text.trim() === '') {
      throw new DramaError('REFERENCE_TRANSCRIPT_EMPTY', `reference ${index} has no transcript`, { param });
    }
    const speaker = reference.speaker ?? index;
    checkSpeaker(speaker, `references[${index}].speaker`);
    checkReferenceCodes(reference.codes, index, limits, tokenizer.semanticCount);
    return speakerSegments(reference.text, speaker, normalize, tokenizer, param)
      .map((segment) => speakerTag(segment.speaker) + segment.text)
      .join('');
  });

  const rows = new RowWriter();
  if (references.length === 0) {
    rows.text(encodeTemplate(tokenizer, `<|im_start|>system\n${SYSTEM}<|im_end|>\n`));
  } else {
    rows.text(encodeTemplate(tokenizer, `<|im_start|>system\n${SYSTEM_WITH_REFERENCES}`));
    rows.text(tokenizer.encode(transcripts.join('\n')));
    rows.text(encodeTemplate(tokenizer, REFERENCE_SPEECH));
    for (const reference of references) rows.frames(reference.codes, tokenizer.semanticBegin);
    rows.text(encodeTemplate(tokenizer, '<|im_end|>\n'));
  }
  const referenceRows = rows.length;

  rows.text(encodeTemplate(tokenizer, '<|im_start|>user\n'));
  const contentStart = rows.length;
  segments.forEach((segment, index) => {
    rows.text([tokenizer.tokenId(speakerTag(segment.speaker))]);
    const spoken = index === 0 && direction !== '' ? `[${direction}] ${segment.text}` : segment.text;
    if (spoken !== '') rows.text(tokenizer.encode(spoken));
  });
  const textTokens = rows.length - contentStart;
  checkTextTokens(textTokens, limits, 'text');
  rows.text(encodeTemplate(tokenizer, '<|im_end|>\n<|im_start|>assistant\n<|voice|>'));

  return {
    tokens: Int32Array.from(rows.tokens),
    codes: Int32Array.from(rows.codes),
    referenceRows,
    textTokens,
  };
}
