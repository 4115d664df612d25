// Tokenizer parity: both implementations give the ids Python `tokenizers` 0.23.2 gave (tools/oracle/tokenizer.py)
// on the synthetic checkpoint's tokenizer.json, and the load-time checks refuse broken files by name.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { Tokenizer } from '../../src/text/tokenizer.ts';
import { buildSyntheticTokenizerFiles } from '../../src/text/vocabulary.ts';
import { syntheticTokenizerDir } from './tokenizerFiles.ts';

interface Fixture {
  tokenizer_json_sha256: string;
  vocabulary_size: number;
  semantic_begin: number;
  cases: { text: string; ids: number[] }[];
}

const fixture = JSON.parse(
  readFileSync(new URL('../fixtures/text/tokenizer-ids.json', import.meta.url), 'utf8'),
) as Fixture;

test('the fixture was made from the tokenizer.json we write today', () => {
  const written = readFileSync(join(syntheticTokenizerDir(), 'tokenizer.json'));
  const digest = createHash('sha256').update(written).digest('hex');
  assert.equal(digest, fixture.tokenizer_json_sha256, 'vocabulary changed: rerun tools/oracle/tokenizer.py');
  assert.equal(fixture.cases.length, 60);
});

for (const implementation of ['native', 'fallback'] as const) {
  describe(`${implementation} tokenizer`, () => {
    const loaded = Tokenizer.load(syntheticTokenizerDir(), { implementation });
    after(async () => (await loaded).close());

    test('gives the oracle ids for all 60 strings', async () => {
      const tokenizer = await loaded;
      assert.equal(tokenizer.implementation, implementation, 'the native binding loads on this machine');
      assert.match(
        tokenizer.describe(),
        implementation === 'native' ? /native tokenizers binding/ : /fallback \(the fallback was requested\)/,
      );
      for (const { text, ids } of fixture.cases) {
        assert.deepEqual(Array.from(tokenizer.encode(text)), ids, `ids of ${JSON.stringify(text.slice(0, 60))}`);
      }
    });

    test('reads a lone surrogate as U+FFFD, as the other implementation does', async () => {
      const tokenizer = await loaded;
      assert.deepEqual(Array.from(tokenizer.encode('a\ud800b')), Array.from(tokenizer.encode('a\ufffdb')));
    });

    test('names its special tokens and sizes as the oracle does', async () => {
      const tokenizer = await loaded;
      assert.equal(tokenizer.vocabularySize, fixture.vocabulary_size);
      assert.equal(tokenizer.semanticBegin, fixture.semantic_begin);
      assert.equal(tokenizer.semanticCount, 4096);
      assert.equal(tokenizer.tokenId('<|semantic:4095|>'), fixture.semantic_begin + 4095);
      const chat = fixture.cases.find((c) => c.text === '<|im_start|>user\nhi<|im_end|>\n')!;
      assert.equal(tokenizer.imEnd, chat.ids[4]);
      assert.throws(() => tokenizer.tokenId('<|speaker:16|>'), { code: 'TOKEN_NOT_IN_VOCABULARY' });
    });
  });
}

test('a folder without tokenizer.json is refused by name', async (t) => {
  const empty = mkdtempSync(join(tmpdir(), 'drama3-no-tokenizer-'));
  t.after(() => rmSync(empty, { recursive: true, force: true }));
  await assert.rejects(Tokenizer.load(empty), { code: 'TOKENIZER_NOT_FOUND', kind: 'bad_checkpoint' });
});

test('semantic tokens out of order are refused by name', async (t) => {
  const json = JSON.parse(buildSyntheticTokenizerFiles().tokenizerJson) as {
    added_tokens: { id: number; content: string }[];
  };
  const five = json.added_tokens.find((token) => token.content === '<|semantic:5|>')!;
  const six = json.added_tokens.find((token) => token.content === '<|semantic:6|>')!;
  [five.id, six.id] = [six.id, five.id];
  const folder = mkdtempSync(join(tmpdir(), 'drama3-bad-tokenizer-'));
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  writeFileSync(join(folder, 'tokenizer.json'), JSON.stringify(json));
  await assert.rejects(Tokenizer.load(folder, { implementation: 'fallback' }), {
    code: 'TOKENIZER_SEMANTIC_NOT_CONTIGUOUS',
    message: /<\|semantic:5\|> has id \d+, expected \d+/,
  });
});
