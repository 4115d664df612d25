// Long-text splitting: no piece over a budget, pieces concatenate to the input, cuts at the highest boundary level.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { codePoints } from '../../src/text/limits.ts';
import { splitLongText, withSpeakerTags } from '../../src/text/split.ts';
import { Tokenizer } from '../../src/text/tokenizer.ts';
import { syntheticTokenizerDir } from './tokenizerFiles.ts';

const loaded = Tokenizer.load(syntheticTokenizerDir());
after(async () => (await loaded).close());

const SENTENCES = [
  'The morning was cold and grey.',
  'She walked to the station without looking back!',
  'Did anyone notice?',
  'Dr. Reyes waited by the clock, reading a paper she had already read twice.',
  'Trains came and went; none of them was hers.',
  '“Not today,” she said.',
];

/** About twenty minutes of speech: some 3,000 words of varied sentences. */
function longText(): string {
  const parts: string[] = [];
  for (let i = 0; parts.join(' ').split(' ').length < 3000; i++) {
    parts.push(SENTENCES[i % SENTENCES.length]!);
    if (i % 7 === 6) parts.push('\n');
  }
  return parts.join(' ');
}

function assertWithin(
  pieces: string[],
  input: string,
  maxCodePoints: number,
  count?: (s: string) => number,
  maxTokens?: number,
) {
  assert.equal(pieces.join(''), input, 'pieces concatenate to the input');
  for (const piece of pieces) {
    assert.ok(piece.length > 0);
    assert.ok(codePoints(piece) <= maxCodePoints, `${codePoints(piece)} code points: ${JSON.stringify(piece)}`);
    if (count !== undefined) assert.ok(count(piece) <= maxTokens!, `${count(piece)} tokens: ${JSON.stringify(piece)}`);
  }
}

test('text within budget stays whole', () => {
  assert.deepEqual(splitLongText('Short text.', { maxCodePoints: 100 }), ['Short text.']);
});

test('a twenty-minute text splits into pieces within both budgets, at sentence ends', async () => {
  const tokenizer = await loaded;
  const count = (s: string) => tokenizer.encode(s).length;
  const input = longText();
  assert.ok(input.split(' ').length >= 3000);
  const pieces = splitLongText(input, { maxCodePoints: 400, maxTokens: 60, countTokens: count });
  assertWithin(pieces, input, 400, count, 60);
  assert.ok(pieces.length > 50, `${pieces.length} pieces`);
  for (const piece of pieces.slice(0, -1)) {
    assert.match(piece, /([.!?”]\s+|\n)$/, `cut at a sentence end: ${JSON.stringify(piece.slice(-30))}`);
  }
  assert.ok(!pieces.some((piece) => piece.endsWith('Dr. ')), 'an abbreviation does not end a sentence');
});

test('a sentence longer than the budget is cut at clause ends, then between words', () => {
  const sentence =
    'When the rain finally stopped, the streets were empty, the lamps were lit, and the long walk home began again';
  const clauses = splitLongText(sentence, { maxCodePoints: 40 });
  assertWithin(clauses, sentence, 40);
  for (const piece of clauses.slice(0, -1)) assert.match(piece, /, $/, `clause cut: ${JSON.stringify(piece)}`);

  const words = 'one two three four five six seven eight nine ten eleven twelve thirteen fourteen';
  const pieces = splitLongText(words, { maxCodePoints: 12 });
  assertWithin(pieces, words, 12);
  for (const piece of pieces.slice(0, -1)) assert.match(piece, /\s$/, `word cut: ${JSON.stringify(piece)}`);
});

test('a word longer than the budget is cut between code points, never inside a surrogate pair', () => {
  const word = `${'🎉'.repeat(7)}abcdefghij`;
  const pieces = splitLongText(word, { maxCodePoints: 4 });
  assertWithin(pieces, word, 4);
  for (const piece of pieces) assert.ok(!/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/.test(piece));
});

test('directions and speaker tags are not cut, and speaker turns are boundaries', () => {
  const input = '<|speaker:0|>Hello there my friend [laughs very loudly] ok<|speaker:1|>Hi back at you, friend.';
  const pieces = splitLongText(input, { maxCodePoints: 40 });
  assertWithin(pieces, input, 40);
  assert.ok(pieces.some((piece) => piece.includes('[laughs very loudly]')));
  assert.ok(pieces.some((piece) => piece.startsWith('<|speaker:1|>')));
  assert.ok(pieces.every((piece) => !/<\|speaker:\d*$|^\d*\|>/.test(piece)));
});

test('CJK text splits at its own sentence marks', () => {
  const input = '今日は晴れです。明日は雨でしょう。明後日はわかりません。';
  const pieces = splitLongText(input, { maxCodePoints: 11 });
  assertWithin(pieces, input, 11);
  assert.deepEqual(pieces, ['今日は晴れです。', '明日は雨でしょう。', '明後日はわかりません。']);
});

test('withSpeakerTags carries the speaker into continuing pieces', () => {
  const pieces = ['<|speaker:0|>One. ', 'Two. ', '<|speaker:1|>Three. ', 'Four.'];
  assert.deepEqual(withSpeakerTags(pieces), [
    '<|speaker:0|>One. ',
    '<|speaker:0|>Two. ',
    '<|speaker:1|>Three. ',
    '<|speaker:1|>Four.',
  ]);
  assert.deepEqual(withSpeakerTags(['Plain. ', 'Text.']), ['Plain. ', 'Text.']);
});

test('impossible or invalid budgets are refused by name', () => {
  assert.throws(() => splitLongText('abc', { maxCodePoints: 0 }), { code: 'SPLIT_BUDGET_INVALID' });
  assert.throws(() => splitLongText('abc', { maxTokens: 3 }), { code: 'SPLIT_BUDGET_INVALID' });
  assert.throws(() => splitLongText('ab🎉', { maxTokens: 1, countTokens: (s) => new TextEncoder().encode(s).length }), {
    code: 'TEXT_UNSPLITTABLE',
  });
});
