// User text as the prompt builder takes it: structural tokens are refused by name (MODEL.md §5), speaker tags
// `<|speaker:0|>`..`<|speaker:15|>` (no leading zeros) split it into segments, each spoken by one speaker.
import { DramaError } from '../errors.ts';
import { codePoints } from './limits.ts';
import { SPEAKER_TAG_COUNT } from './vocabulary.ts';

export interface SpeakerSegment {
  /** Speaker of this segment; undefined for text before the first tag. */
  readonly speaker: number | undefined;
  readonly text: string;
}

const SPEAKER_PREFIX = '<|speaker:';
const SEMANTIC_PREFIX = '<|semantic:';
const SPEAKER_TAG = /<\|speaker:([^|<>]{0,8})\|>/y;
const SPEAKER_NUMBER = /^(0|[1-9][0-9]*)$/;

const structuralPatterns = new WeakMap<readonly string[], RegExp>();

/** One regex over every added token except speaker tags, plus any `<|semantic:` prefix, longest first. */
function structuralPattern(addedTokens: readonly string[]): RegExp {
  let pattern = structuralPatterns.get(addedTokens);
  if (pattern === undefined) {
    const names = addedTokens
      .filter((token) => !token.startsWith(SPEAKER_PREFIX) && !token.startsWith(SEMANTIC_PREFIX))
      .concat(SEMANTIC_PREFIX)
      .sort((a, b) => b.length - a.length)
      .map((token) => token.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    pattern = new RegExp(names.join('|'), 'g');
    structuralPatterns.set(addedTokens, pattern);
  }
  return pattern;
}

/** Refuses text that contains any token the tokenizer would read as structure (speaker tags are checked apart). */
function refuseStructuralTokens(text: string, addedTokens: readonly string[], param: string): void {
  const pattern = structuralPattern(addedTokens);
  pattern.lastIndex = 0;
  const found = pattern.exec(text);
  if (found !== null) {
    throw new DramaError(
      'TEXT_STRUCTURAL_TOKEN',
      `${param} contains the structural token ${JSON.stringify(found[0])} at code point ` +
        `${codePoints(text.slice(0, found.index))}; structural tokens cannot appear in text`,
      { param },
    );
  }
}

/** Splits text at its speaker tags, refusing malformed or out-of-range tags; any other structure is refused first. */
export function parseSpeakerSegments(text: string, addedTokens: readonly string[], param: string): SpeakerSegment[] {
  refuseStructuralTokens(text, addedTokens, param);
  const segments: SpeakerSegment[] = [];
  let speaker: number | undefined;
  let segmentStart = 0;
  let searchFrom = 0;
  for (;;) {
    const tagStart = text.indexOf(SPEAKER_PREFIX, searchFrom);
    if (tagStart < 0) break;
    const where = `at code point ${codePoints(text.slice(0, tagStart))}`;
    SPEAKER_TAG.lastIndex = tagStart;
    const tag = SPEAKER_TAG.exec(text);
    if (tag === null || !/^[0-9]+$/.test(tag[1]!)) {
      throw new DramaError('TEXT_STRUCTURAL_TOKEN', `${param} has a malformed speaker tag ${where}`, { param });
    }
    const value = tag[1]!;
    if (!SPEAKER_NUMBER.test(value) || Number(value) >= SPEAKER_TAG_COUNT) {
      throw new DramaError(
        'SPEAKER_OUT_OF_RANGE',
        `${param} has the speaker tag ${tag[0]} ${where}; speakers are <|speaker:0|>..<|speaker:${SPEAKER_TAG_COUNT - 1}|> ` +
          'without leading zeros',
        { param },
      );
    }
    if (tagStart > segmentStart || speaker !== undefined) {
      segments.push({ speaker, text: text.slice(segmentStart, tagStart) });
    }
    speaker = Number(value);
    segmentStart = tagStart + tag[0].length;
    searchFrom = segmentStart;
  }
  if (segmentStart < text.length || speaker !== undefined) {
    segments.push({ speaker, text: text.slice(segmentStart) });
  }
  return segments;
}
