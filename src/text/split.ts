// Long input → pieces that each fit the budgets (code points and/or tokens), cut at sentence ends, then clause ends,
// then between words, and only as a last resort between code points. The pieces concatenate back to the input
// exactly (whitespace stays with the piece before it); `[directions]`, `<tags>` and `<|speaker:N|>` are never cut
// unless one alone exceeds the budget. The engine speaks the pieces in order with one voice and sampler state.
import { DramaError } from '../errors.ts';
import { codePoints } from './limits.ts';
import { PROTECTED_SPANS } from './normalize.ts';

export interface SplitBudget {
  readonly maxCodePoints?: number;
  readonly maxTokens?: number;
  /** Counts tokens of a piece as the prompt will (needed with maxTokens). */
  readonly countTokens?: (text: string) => number;
}

/** Abbreviations whose period does not end a sentence. */
const ABBREVIATIONS = new Set(['mr', 'mrs', 'ms', 'dr', 'prof', 'st', 'sr', 'jr', 'vs', 'etc', 'e.g', 'i.e']);

// Cut positions are the ends of these matches (the unit keeps its punctuation and trailing whitespace).
const SENTENCE_END = /[.!?…]+["'”’)\]]*\s+|[。！？]+["'”’)」』]*\s*|\n+/g;
const CLAUSE_END = /[,;:]["'”’)\]]*\s+|[—–]\s*|[、，；：]\s*/g;
const WORD_END = /\s+/g;
const SPEAKER_TAG_START = /<\|speaker:/g;

type Level = 'sentence' | 'clause' | 'word' | 'codePoint';
const LEVELS: readonly Level[] = ['sentence', 'clause', 'word', 'codePoint'];

function protectedRanges(text: string): [number, number][] {
  return Array.from(text.matchAll(PROTECTED_SPANS), (match) => [match.index, match.index + match[0].length]);
}

function endsWithAbbreviation(text: string, end: number): boolean {
  const word = /([\p{L}.]+)\.[\s"'”’)\]]*$/u.exec(text.slice(Math.max(0, end - 12), end));
  return word !== null && ABBREVIATIONS.has(word[1]!.toLowerCase());
}

/** Positions inside `text` (exclusive of 0 and text.length) where a unit of this level ends. */
function cutPositions(text: string, level: Level): number[] {
  const positions = new Set<number>();
  if (level === 'codePoint') {
    let index = 0;
    for (const character of text) {
      index += character.length;
      positions.add(index);
    }
  } else {
    const pattern = level === 'sentence' ? SENTENCE_END : level === 'clause' ? CLAUSE_END : WORD_END;
    for (const match of text.matchAll(pattern)) {
      const end = match.index + match[0].length;
      if (level === 'sentence' && endsWithAbbreviation(text, end)) continue;
      positions.add(end);
    }
    // A new speaker's turn is a sentence boundary too.
    if (level === 'sentence') for (const match of text.matchAll(SPEAKER_TAG_START)) positions.add(match.index);
  }
  const ranges = protectedRanges(text);
  return [...positions]
    .filter((position) => position > 0 && position < text.length)
    .filter((position) => level === 'codePoint' || !ranges.some(([start, end]) => position > start && position < end))
    .sort((a, b) => a - b);
}

function units(text: string, level: Level): string[] {
  const result: string[] = [];
  let start = 0;
  for (const position of cutPositions(text, level)) {
    result.push(text.slice(start, position));
    start = position;
  }
  result.push(text.slice(start));
  return result;
}

export function splitLongText(text: string, budget: SplitBudget): string[] {
  const { maxCodePoints, maxTokens, countTokens } = budget;
  for (const [name, value] of [
    ['maxCodePoints', maxCodePoints],
    ['maxTokens', maxTokens],
  ] as const) {
    if (value !== undefined && (!Number.isInteger(value) || value < 1)) {
      throw new DramaError('SPLIT_BUDGET_INVALID', `${name} is ${value}; it must be a positive integer`, {
        kind: 'internal',
      });
    }
  }
  if (maxTokens !== undefined && countTokens === undefined) {
    throw new DramaError('SPLIT_BUDGET_INVALID', 'maxTokens needs countTokens', { kind: 'internal' });
  }
  const fits = (piece: string): boolean =>
    (maxCodePoints === undefined || codePoints(piece) <= maxCodePoints) &&
    (maxTokens === undefined || countTokens!(piece) <= maxTokens);

  const pieces: string[] = [];
  const pack = (segment: string, levelIndex: number): void => {
    let current = '';
    for (const unit of units(segment, LEVELS[levelIndex]!)) {
      if (fits(current + unit)) {
        current += unit;
        continue;
      }
      if (current !== '') pieces.push(current);
      current = '';
      if (fits(unit)) {
        current = unit;
      } else if (levelIndex + 1 < LEVELS.length) {
        pack(unit, levelIndex + 1);
        // The unit's last piece may still take the next units of this level.
        current = pieces.pop()!;
      } else {
        throw new DramaError(
          'TEXT_UNSPLITTABLE',
          `the character ${JSON.stringify(unit)} alone exceeds the budget of ${maxTokens} tokens`,
        );
      }
    }
    if (current !== '') pieces.push(current);
  };
  if (text === '' || fits(text)) return [text];
  pack(text, 0);
  return pieces;
}

/**
 * Pieces ready to be spoken one by one: each piece that continues another speaker's turn is prefixed with that
 * speaker's tag, so a dialogue keeps its voices across pieces. (The result no longer concatenates to the input.)
 */
export function withSpeakerTags(pieces: readonly string[]): string[] {
  let active: string | undefined;
  return pieces.map((piece) => {
    const startsTagged = /^\s*<\|speaker:\d+\|>/.test(piece);
    const spoken = active !== undefined && !startsTagged ? active + piece : piece;
    const tags = piece.match(/<\|speaker:\d+\|>/g);
    if (tags !== null) active = tags.at(-1);
    return spoken;
  });
}
