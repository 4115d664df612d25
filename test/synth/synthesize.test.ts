import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SafetensorsCheckpoint } from '../../src/checkpoint/safetensors-reader.ts';
import { readTorchCheckpoint } from '../../src/checkpoint/torch-pth.ts';
import { TINY_CODEC_CONFIG } from '../../src/codec/config.ts';
import { synthesizeCodecWeights } from '../../src/codec/synth-weights.ts';
import { loadConfig, SYNTHETIC_VOCAB_SIZE } from '../../src/model/config.ts';
import { checkWeights } from '../../src/model/weights-check.ts';
import { planCheckpoint, tokenizerFacts } from '../../src/synth/plan.ts';
import { synthesizeCheckpoint, synthesizeTensors } from '../../src/synth/synthesize.ts';
import { IM_END, semanticToken } from '../../src/text/vocabulary.ts';

const SEED = 11;

describe('tokenizerFacts', () => {
  test('refuses a tokenizer without Drama tokens by name', () => {
    const bare = JSON.stringify({ model: { vocab: { a: 0 } }, added_tokens: [{ id: 1, content: IM_END }] });
    assert.throws(() => tokenizerFacts(bare), { code: 'SYNTH_TOKEN_MISSING' });
  });
});

describe('synthesizeCheckpoint (tiny)', () => {
  let root: string;
  let dir: string;
  const progress: [number, number][] = [];

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'drama3-synth-'));
    dir = join(root, 'tiny');
    await synthesizeCheckpoint(dir, {
      preset: 'tiny',
      seed: SEED,
      experts: 'fp8',
      onProgress: (done, total) => progress.push([done, total]),
    });
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  test('writes every file of the checkpoint contract and nothing else', async () => {
    const files = (await readdir(dir)).sort();
    const shards = files.filter((name) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(name));
    assert.ok(shards.length >= 2, 'tiny is sharded so that the index is exercised');
    assert.deepEqual(
      files.filter((name) => !shards.includes(name)),
      ['codec.pth', 'config.json', 'model.safetensors.index.json', 'tokenizer.json', 'tokenizer_config.json'],
    );
    assert.deepEqual(await readdir(root), ['tiny'], 'no temporary folder is left beside it');
    assert.equal((await stat(dir)).mode & 0o777, 0o755);
    const [lastDone, lastTotal] = progress.at(-1)!;
    assert.equal(lastDone, lastTotal);
    assert.ok(
      progress.every(([done, total], index) => done <= total && (index === 0 || done >= progress[index - 1]![0])),
    );
  });

  test('config.json is synthetic, with the tokenizer size rounded up to 64 and its token ids', async () => {
    const { config, unknownKeys } = await loadConfig(dir);
    assert.deepEqual(unknownKeys, []);
    assert.equal(config.synthetic, true);
    const tokenizer = JSON.parse(await readFile(join(dir, 'tokenizer.json'), 'utf8')) as {
      model: { vocab: Record<string, number> };
      added_tokens: { id: number; content: string }[];
    };
    const ids = [...Object.values(tokenizer.model.vocab), ...tokenizer.added_tokens.map((token) => token.id)];
    const size = ids.reduce((largest, id) => Math.max(largest, id), 0) + 1;
    assert.equal(config.text.vocabSize, Math.ceil(size / 64) * 64);
    assert.equal(config.text.vocabSize, SYNTHETIC_VOCAB_SIZE);
    const idOf = (content: string) => tokenizer.added_tokens.find((token) => token.content === content)?.id;
    assert.equal(config.specialTokens.imEnd, idOf(IM_END));
    assert.equal(config.specialTokens.semanticBegin, idOf(semanticToken(0)));
    assert.deepEqual(config.text.eosTokenIds, [idOf(IM_END)]);
    assert.ok(config.quantization !== undefined);
  });

  test('the shards match the weight map and hold values that depend only on (seed, name)', async () => {
    const { config } = await loadConfig(dir);
    const checkpoint = await SafetensorsCheckpoint.open(dir);
    try {
      assert.equal(checkWeights(config, checkpoint).ok, true);
      const plan = planCheckpoint('tiny', 'fp8', tokenizerFacts(await readFile(join(dir, 'tokenizer.json'), 'utf8')));
      const wanted = new Set([
        'model.layers.2.linear_attn.A_log',
        'model.layers.5.mlp.experts.3.up_proj.weight',
        'model.layers.5.mlp.experts.3.up_proj.weight_scale_inv',
        'audio_decoder_mtp.layers.8.head.weight',
      ]);
      let compared = 0;
      for (const [name, tensor] of synthesizeTensors(plan, SEED)) {
        if (!wanted.has(name)) continue;
        const stored = await checkpoint.read(name);
        assert.deepEqual(stored.data, tensor.data, name);
        compared += 1;
      }
      assert.equal(compared, wanted.size);
      const other = [...synthesizeTensors(plan, SEED + 1)].find(
        ([name]) => name === 'model.layers.2.linear_attn.A_log',
      )!;
      assert.notDeepEqual(other[1].data, (await checkpoint.read('model.layers.2.linear_attn.A_log')).data);
    } finally {
      await checkpoint.close();
    }
  });

  test('codec.pth is the codec synthesizer output for the same seed', async () => {
    const stored = await readTorchCheckpoint(join(dir, 'codec.pth'));
    const expected = synthesizeCodecWeights(TINY_CODEC_CONFIG, SEED);
    assert.deepEqual([...stored.keys()].sort(), [...expected.keys()].sort());
    const name = [...expected.keys()][7]!;
    assert.deepEqual(stored.get(name)!.data, expected.get(name)!.data);
  });

  test('refuses a destination that is not an absent or empty folder', async () => {
    await assert.rejects(synthesizeCheckpoint(dir, { preset: 'tiny', seed: 0, experts: 'fp8' }), {
      code: 'SYNTH_OUT_EXISTS',
    });
    const file = join(root, 'a-file');
    await writeFile(file, 'x');
    await assert.rejects(synthesizeCheckpoint(file, { preset: 'tiny', seed: 0, experts: 'fp8' }), {
      code: 'SYNTH_OUT_EXISTS',
    });
    await rm(file);
  });

  test('refuses a bad seed by name', async () => {
    await assert.rejects(synthesizeCheckpoint(join(root, 'x'), { preset: 'tiny', seed: -1, experts: 'fp8' }), {
      code: 'SYNTH_BAD_SEED',
    });
    await assert.rejects(synthesizeCheckpoint(join(root, 'x'), { preset: 'tiny', seed: 1.5, experts: 'fp8' }), {
      code: 'SYNTH_BAD_SEED',
    });
  });

  test('an abort stops between tensors and removes the temporary folder', async () => {
    const cancel = new AbortController();
    await assert.rejects(
      synthesizeCheckpoint(join(root, 'cancelled'), {
        preset: 'tiny',
        seed: 0,
        experts: 'fp8',
        signal: cancel.signal,
        onProgress: (done) => {
          if (done > 0) cancel.abort();
        },
      }),
      { code: 'SYNTH_CANCELLED' },
    );
    assert.deepEqual((await readdir(root)).sort(), ['tiny']);
  });

  test('a failure midway leaves neither a half checkpoint nor a temporary folder', async () => {
    const target = join(root, 'broken');
    await mkdir(target);
    await assert.rejects(
      synthesizeCheckpoint(target, {
        preset: 'tiny',
        seed: 0,
        experts: 'bf16',
        onProgress: (done, total) => {
          if (done > total / 3) throw new Error('disk full');
        },
      }),
      /disk full/,
    );
    assert.deepEqual((await readdir(root)).sort(), ['broken', 'tiny']);
    assert.deepEqual(await readdir(target), [], 'the empty destination is left as it was');
  });
});
