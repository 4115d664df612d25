// Every refusal of the prompt builder: its code, its param and the numbers in its message.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { CODES_PER_FRAME } from '../../src/shared/frame.ts';
import type { TextLimits } from '../../src/text/limits.ts';
import { DEFAULT_TEXT_LIMITS } from '../../src/text/limits.ts';
import { buildPrompt, type PromptRequest } from '../../src/text/prompt.ts';
import { Tokenizer } from '../../src/text/tokenizer.ts';
import { syntheticTokenizerDir } from './tokenizerFiles.ts';

const loaded = Tokenizer.load(syntheticTokenizerDir());
after(async () => (await loaded).close());

function frames(count: number): Int32Array {
  return new Int32Array(count * CODES_PER_FRAME).fill(5);
}

async function refused(
  request: PromptRequest,
  expected: { code: string; param: string; message: RegExp },
  limits: Partial<TextLimits> = {},
): Promise<void> {
  const tokenizer = await loaded;
  assert.throws(
    () => buildPrompt(tokenizer, request, limits),
    (error: unknown) => {
      const e = error as { code: string; kind: string; param: string; message: string };
      assert.equal(e.code, expected.code);
      assert.equal(e.kind, 'invalid_input');
      assert.equal(e.param, expected.param);
      assert.match(e.message, expected.message);
      return true;
    },
  );
}

test('empty text', async () => {
  await refused({ text: '' }, { code: 'TEXT_EMPTY', param: 'text', message: /text is empty/ });
  await refused({ text: ' \n\t ' }, { code: 'TEXT_EMPTY', param: 'text', message: /text is empty/ });
  await refused({ text: '<|speaker:1|>  ' }, { code: 'TEXT_EMPTY', param: 'text', message: /nothing to speak/ });
});

test('structural tokens in text, transcripts and instructions', async () => {
  for (const [text, token, at] of [
    ['Hello <|im_end|> there', '<|im_end|>', 6],
    ['日本<|im_start|>', '<|im_start|>', 2],
    ['x<|semantic:12|>', '<|semantic:', 1],
    ['<|semantic:99999', '<|semantic:', 0],
    ['a <|voice|>', '<|voice|>', 2],
    ['<|text|>', '<|text|>', 0],
    ['<|interleave|>', '<|interleave|>', 0],
    ['<|endoftext|>', '<|endoftext|>', 0],
    ['think <think> again', '<think>', 6],
  ] as const) {
    await refused(
      { text },
      {
        code: 'TEXT_STRUCTURAL_TOKEN',
        param: 'text',
        message: new RegExp(`structural token "${token.replaceAll('|', '\\|')}" at code point ${at}`),
      },
    );
  }
  await refused(
    { text: 'Hi.', references: [{ text: 'ok <|im_end|>', codes: frames(2) }] },
    { code: 'TEXT_STRUCTURAL_TOKEN', param: 'references[0].text', message: /<\|im_end\|>/ },
  );
  await refused(
    { text: 'Hi.', instructions: 'calm <|voice|>' },
    { code: 'TEXT_STRUCTURAL_TOKEN', param: 'instructions', message: /<\|voice\|>/ },
  );
  await refused(
    { text: 'Hi.', instructions: '<|speaker:2|>calm' },
    { code: 'TEXT_STRUCTURAL_TOKEN', param: 'instructions', message: /speaker tags/ },
  );
  await refused(
    { text: 'Hi <|speaker:x|> there' },
    { code: 'TEXT_STRUCTURAL_TOKEN', param: 'text', message: /malformed speaker tag at code point 3/ },
  );
});

test('speaker tags out of range', async () => {
  await refused(
    { text: '<|speaker:16|>Hi' },
    { code: 'SPEAKER_OUT_OF_RANGE', param: 'text', message: /<\|speaker:16\|> at code point 0.*<\|speaker:15\|>/ },
  );
  await refused(
    { text: 'Hi <|speaker:01|>there' },
    { code: 'SPEAKER_OUT_OF_RANGE', param: 'text', message: /<\|speaker:01\|> at code point 3.*leading zeros/ },
  );
  await refused(
    { text: 'Hi', references: [{ text: 'Ref', codes: frames(1), speaker: 16 }] },
    { code: 'SPEAKER_OUT_OF_RANGE', param: 'references[0].speaker', message: /is 16; speakers are 0\.\.15/ },
  );
  await refused(
    { text: 'Hi', references: [{ text: '<|speaker:99|>Ref', codes: frames(1) }] },
    { code: 'SPEAKER_OUT_OF_RANGE', param: 'references[0].text', message: /<\|speaker:99\|>/ },
  );
});

test('too many references (default 4)', async () => {
  const references = Array.from({ length: 5 }, () => ({ text: 'Ref.', codes: frames(1) }));
  await refused(
    { text: 'Hi', references },
    { code: 'TOO_MANY_REFERENCES', param: 'references', message: /has 5 references; the limit is 4/ },
  );
  assert.equal(DEFAULT_TEXT_LIMITS.maxReferences, 4);
  await refused(
    { text: 'Hi', references: references.slice(0, 3) },
    { code: 'TOO_MANY_REFERENCES', param: 'references', message: /has 3 references; the limit is 2/ },
    { maxReferences: 2 },
  );
});

test('a reference transcript too long, in bytes', async () => {
  await refused(
    { text: 'Hi', references: [{ text: 'é'.repeat(6), codes: frames(1) }] },
    { code: 'REFERENCE_TRANSCRIPT_TOO_LONG', param: 'references[0].text', message: /12 UTF-8 bytes; the limit is 11/ },
    { maxTranscriptBytes: 11 },
  );
});

test('a reference without a transcript', async () => {
  await refused(
    {
      text: 'Hi',
      references: [
        { text: 'ok', codes: frames(1) },
        { text: '  ', codes: frames(1) },
      ],
    },
    { code: 'REFERENCE_TRANSCRIPT_EMPTY', param: 'references[1].text', message: /reference 1 has no transcript/ },
  );
});

test('a reference too long, in frames, and malformed codes', async () => {
  await refused(
    {
      text: 'Hi',
      references: [
        { text: 'a', codes: frames(2) },
        { text: 'b', codes: frames(9) },
      ],
    },
    { code: 'REFERENCE_TOO_LONG', param: 'references[1].codes', message: /reference 1 is 9 frames; the limit is 8/ },
    { maxReferenceFrames: 8 },
  );
  await refused(
    { text: 'Hi', references: [{ text: 'a', codes: new Int32Array(15) }] },
    { code: 'REFERENCE_CODES_MALFORMED', param: 'references[0].codes', message: /15 values, not a multiple of 10/ },
  );
  await refused(
    { text: 'Hi', references: [{ text: 'a', codes: new Int32Array(0) }] },
    { code: 'REFERENCE_EMPTY', param: 'references[0].codes', message: /no frames/ },
  );
  const semantic = frames(2);
  semantic[10] = 4096;
  await refused(
    { text: 'Hi', references: [{ text: 'a', codes: semantic }] },
    {
      code: 'REFERENCE_CODE_OUT_OF_RANGE',
      param: 'references[0].codes',
      message: /frame 1 codebook 0 is 4096; .*0\.\.4095/,
    },
  );
  const residual = frames(2);
  residual[3] = 1024;
  await refused(
    { text: 'Hi', references: [{ text: 'a', codes: residual }] },
    {
      code: 'REFERENCE_CODE_OUT_OF_RANGE',
      param: 'references[0].codes',
      message: /frame 0 codebook 3 is 1024; .*0\.\.1023/,
    },
  );
});

test('text over its limit in bytes, code points and tokens, each named', async () => {
  // 4 code points, 12 bytes, 5 tokens with the speaker tag: each limit alone refuses it.
  const text = '日本語。';
  const roomy = { maxTextBytes: 100, maxTextCodePoints: 100, maxTextTokens: 100 };
  const tokenizer = await loaded;
  assert.doesNotThrow(() => buildPrompt(tokenizer, { text }, roomy));
  const tokens = buildPrompt(tokenizer, { text }, roomy).textTokens;
  await refused(
    { text },
    { code: 'TEXT_TOO_MANY_BYTES', param: 'text', message: /text is 12 UTF-8 bytes; the limit is 11 bytes/ },
    { ...roomy, maxTextBytes: 11 },
  );
  await refused(
    { text },
    { code: 'TEXT_TOO_MANY_CODE_POINTS', param: 'text', message: /text is 4 code points; the limit is 3 code points/ },
    { ...roomy, maxTextCodePoints: 3 },
  );
  await refused(
    { text },
    {
      code: 'TEXT_TOO_MANY_TOKENS',
      param: 'text',
      message: new RegExp(`text is ${tokens} tokens; the limit is ${tokens - 1} tokens`),
    },
    { ...roomy, maxTextTokens: tokens - 1 },
  );
});

test('instructions too long, in bytes', async () => {
  await refused(
    { text: 'Hi', instructions: 'slowly and quietly' },
    { code: 'INSTRUCTIONS_TOO_LONG', param: 'instructions', message: /18 UTF-8 bytes; the limit is 10 bytes/ },
    { maxInstructionBytes: 10 },
  );
});
