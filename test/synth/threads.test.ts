// Tensors drawn on threads are written exactly as drawn on one: every file of the checkpoint is byte-identical for
// 1 and 3 threads (tiny and small); an abort or a failing tensor with threads leaves nothing behind and stops them.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { TINY_CODEC_CONFIG } from '../../src/codec/config.ts';
import { codecWeightBytes, synthesizeCodecWeights } from '../../src/codec/synth-weights.ts';
import type { TensorSpec } from '../../src/model/weights.ts';
import { planCheckpoint, type SynthPlan, type SynthPreset, tokenizerFacts } from '../../src/synth/plan.ts';
import { synthesizeCheckpoint } from '../../src/synth/synthesize.ts';
import { synthesizeTensorsOnThreads } from '../../src/synth/tensor-threads.ts';
import { buildSyntheticTokenizerFiles } from '../../src/text/vocabulary.ts';

const SEED = 11;

/** SHA-256 of every file in `dir`, by name. */
async function fileDigests(dir: string): Promise<Record<string, string>> {
  const digests: Record<string, string> = {};
  for (const name of (await readdir(dir)).sort()) {
    digests[name] = createHash('sha256')
      .update(await readFile(join(dir, name)))
      .digest('hex');
  }
  return digests;
}

describe('synthesizeCheckpoint on threads', () => {
  let root: string;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'drama3-synth-threads-'));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  for (const preset of ['tiny', 'small'] as SynthPreset[]) {
    test(`${preset}: every file is byte-identical for 1 and 3 threads`, async () => {
      const digests = [];
      for (const threads of [1, 3]) {
        const dir = join(root, `${preset}-${threads}`);
        await synthesizeCheckpoint(dir, { preset, seed: SEED, experts: 'fp8', threads });
        digests.push(await fileDigests(dir));
        await rm(dir, { recursive: true });
      }
      assert.ok(Object.keys(digests[0]!).filter((name) => name.endsWith('.safetensors')).length >= 2);
      assert.deepEqual(digests[1], digests[0]);
    });
  }

  test('refuses a thread count that is not a positive integer by name', async () => {
    for (const threads of [0, -2, 1.5, Number.NaN]) {
      await assert.rejects(
        synthesizeCheckpoint(join(root, 'x'), { preset: 'tiny', seed: 0, experts: 'fp8', threads }),
        {
          code: 'SYNTH_BAD_THREADS',
        },
      );
    }
    assert.deepEqual(await readdir(root), []);
  });

  test('an abort midway with threads removes the temporary folder, and the threads stop (the process exits)', async () => {
    // A child process: if a thread outlived the abort, it would keep the process alive past the timeout.
    const script = `
      import { synthesizeCheckpoint } from ${JSON.stringify(new URL('../../src/synth/synthesize.ts', import.meta.url).href)};
      const cancel = new AbortController();
      const outcome = await synthesizeCheckpoint(process.argv[1], {
        preset: 'tiny', seed: 0, experts: 'fp8', threads: 3, signal: cancel.signal,
        onProgress: (done, total) => { if (done > total / 4) cancel.abort(); },
      }).then(() => 'written', (error) => error.code);
      console.log(outcome);`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '--eval', script, join(root, 'cancelled')],
      { timeout: 60_000 },
    );
    assert.equal(stdout.trim(), 'SYNTH_CANCELLED');
    assert.deepEqual(await readdir(root), [], 'neither the checkpoint nor its temporary folder is left');
  });
});

describe('codecWeightBytes', () => {
  test('is the byte count of the drawn codec weights, weight-normed pairs included', () => {
    let drawn = 0;
    for (const tensor of synthesizeCodecWeights(TINY_CODEC_CONFIG, SEED).values()) drawn += tensor.data.byteLength;
    assert.equal(codecWeightBytes(TINY_CODEC_CONFIG), drawn);
  });
});

describe('synthesizeTensorsOnThreads', () => {
  let plan: SynthPlan;
  before(() => {
    plan = planCheckpoint('tiny', 'fp8', tokenizerFacts(buildSyntheticTokenizerFiles().tokenizerJson));
  });

  test('a tensor that fails on a thread fails the stream by name, after the tensors before it', async () => {
    const broken: TensorSpec = { ...plan.specs[3]!, shape: [-1] };
    const specs = [...plan.specs.slice(0, 3), broken, ...plan.specs.slice(4)];
    const names: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const [name] of synthesizeTensorsOnThreads({ ...plan, specs }, SEED, 2)) names.push(name);
      })(),
      { code: 'ENGINE_FAILURE' },
    );
    assert.deepEqual(
      names,
      plan.specs.slice(0, 3).map((spec) => spec.name),
    );
  });
});
