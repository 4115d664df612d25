// The reference-bracket-v1 builder against rows laid out independently by tools/oracle/tokenizer.py (Python
// `tokenizers`), the invariance of the reference prefix, and every refusal with its numbers.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { CODES_PER_FRAME } from '../../src/shared/frame.ts';
import { type BuiltPrompt, buildPrompt, type PromptRequest } from '../../src/text/prompt.ts';
import { Tokenizer } from '../../src/text/tokenizer.ts';
import { syntheticTokenizerDir } from './tokenizerFiles.ts';

interface GoldenCase {
  name: string;
  request: {
    text: string;
    instructions?: string;
    references?: { text: string; codes: number[][] }[];
  };
  tokens: number[];
  codes: number[][];
  reference_rows: number;
}

const golden = JSON.parse(readFileSync(new URL('../fixtures/text/prompt-golden.json', import.meta.url), 'utf8')) as {
  cases: GoldenCase[];
};
const loaded = Tokenizer.load(syntheticTokenizerDir());
after(async () => (await loaded).close());

function toRequest(request: GoldenCase['request']): PromptRequest {
  return {
    text: request.text,
    instructions: request.instructions,
    references: request.references?.map((reference) => ({
      text: reference.text,
      codes: Int32Array.from(reference.codes.flat()),
    })),
  };
}

function frames(count: number, seed: number): Int32Array {
  return Int32Array.from({ length: count * CODES_PER_FRAME }, (_, i) => (seed * 31 + i * 7) % 1024);
}

function prefix(prompt: BuiltPrompt): { tokens: number[]; codes: number[] } {
  return {
    tokens: Array.from(prompt.tokens.subarray(0, prompt.referenceRows)),
    codes: Array.from(prompt.codes.subarray(0, prompt.referenceRows * CODES_PER_FRAME)),
  };
}

for (const name of ['default voice', 'two references', 'three-speaker dialogue']) {
  test(`golden rows: ${name}`, async () => {
    const tokenizer = await loaded;
    const expected = golden.cases.find((c) => c.name === name)!;
    const prompt = buildPrompt(tokenizer, toRequest(expected.request));
    assert.deepEqual(Array.from(prompt.tokens), expected.tokens);
    assert.deepEqual(Array.from(prompt.codes), expected.codes.flat());
    assert.equal(prompt.referenceRows, expected.reference_rows);
    assert.equal(prompt.codes.length, prompt.tokens.length * CODES_PER_FRAME);
  });
}

test('code rows carry semanticBegin + code[0] and their 10 codes; text rows carry -1', async () => {
  const tokenizer = await loaded;
  const codes = frames(4, 3);
  const prompt = buildPrompt(tokenizer, { text: 'Hi.', references: [{ text: 'Ref.', codes }] });
  const codeRows = [...prompt.tokens.keys()].filter((row) => prompt.codes[row * CODES_PER_FRAME]! >= 0);
  assert.equal(codeRows.length, 4);
  codeRows.forEach((row, frame) => {
    assert.equal(prompt.tokens[row], tokenizer.semanticBegin + codes[frame * CODES_PER_FRAME]!);
    assert.deepEqual(
      Array.from(prompt.codes.subarray(row * CODES_PER_FRAME, (row + 1) * CODES_PER_FRAME)),
      Array.from(codes.subarray(frame * CODES_PER_FRAME, (frame + 1) * CODES_PER_FRAME)),
    );
  });
  assert.ok(codeRows.at(-1)! < prompt.referenceRows - 1, 'the row after the last code row is inside the prefix');
  assert.equal(prompt.codes[prompt.referenceRows * CODES_PER_FRAME], -1, 'the first row after the prefix is text');
});

test('identical references give identical prefixes whatever the text', async () => {
  const tokenizer = await loaded;
  const references = [
    { text: 'One voice.', codes: frames(5, 1) },
    { text: 'Another voice.', codes: frames(3, 2) },
  ];
  const first = buildPrompt(tokenizer, { text: 'First request.', references });
  const second = buildPrompt(tokenizer, {
    text: '<|speaker:1|>A different, longer request.',
    instructions: 'slowly',
    references: references.map((reference) => ({ text: reference.text, codes: reference.codes.slice() })),
  });
  assert.equal(first.referenceRows, second.referenceRows);
  assert.deepEqual(prefix(first), prefix(second));
  assert.notDeepEqual(Array.from(first.tokens), Array.from(second.tokens));
});

test('a changed last reference row or transcript changes the prefix', async () => {
  const tokenizer = await loaded;
  const codes = frames(5, 1);
  const base = buildPrompt(tokenizer, { text: 'Same text.', references: [{ text: 'Transcript.', codes }] });
  const changedCodes = codes.slice();
  changedCodes[changedCodes.length - 1] = (changedCodes.at(-1)! + 1) % 1024;
  const lastRow = buildPrompt(tokenizer, {
    text: 'Same text.',
    references: [{ text: 'Transcript.', codes: changedCodes }],
  });
  const transcript = buildPrompt(tokenizer, { text: 'Same text.', references: [{ text: 'Transcript!', codes }] });
  assert.notDeepEqual(prefix(lastRow), prefix(base));
  assert.notDeepEqual(prefix(transcript), prefix(base));
});

test('normalisation is on by default and can be turned off', async () => {
  const tokenizer = await loaded;
  const spelled = buildPrompt(tokenizer, { text: 'I have two dogs.', normalize: false });
  const normalized = buildPrompt(tokenizer, { text: 'I have 2 dogs.' });
  const raw = buildPrompt(tokenizer, { text: 'I have 2 dogs.', normalize: false });
  assert.deepEqual(Array.from(normalized.tokens), Array.from(spelled.tokens));
  assert.notDeepEqual(Array.from(raw.tokens), Array.from(spelled.tokens));
});

test('textTokens counts the user message content', async () => {
  const tokenizer = await loaded;
  const prompt = buildPrompt(tokenizer, { text: 'Hello there, how are you today?' });
  assert.equal(prompt.textTokens, 1 + tokenizer.encode('Hello there, how are you today?').length);
});
