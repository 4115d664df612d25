// `drama3 say --codes-out` on the tiny checkpoint: the frames the engine produced (scheduler, lanes, decode thread)
// are the frames the model's own frame loop draws for the same prompt and seed.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { generateFrames } from '../../src/model/generate.ts';
import { DEFAULT_SAMPLING } from '../../src/model/types.ts';
import { buildPrompt } from '../../src/text/prompt.ts';
import { Tokenizer } from '../../src/text/tokenizer.ts';
import { loadTinyModel, tinyCheckpointDir } from '../model/tiny-checkpoint.ts';

const MAIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;
const TEXT = 'Twelve frames, please.';

function say(args: string[]): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'say', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) =>
    child.on('exit', (code) => (code === 0 ? resolve(stderr) : reject(new Error(`say exited ${code}: ${stderr}`)))),
  );
}

test('say --codes-out writes the frames the model draws for the same prompt and seed', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'drama3-say-codes-'));
  try {
    const dir = await tinyCheckpointDir();
    const codesFile = join(folder, 'codes.json');
    await say([
      '--model',
      dir,
      '--frames',
      '12',
      '--seed',
      '5',
      '-o',
      join(folder, 'out.wav'),
      '--codes-out',
      codesFile,
      TEXT,
    ]);
    const written = JSON.parse(await readFile(codesFile, 'utf8')) as { finish_reason: string; frames: number[][] };

    const tokenizer = await Tokenizer.load(dir);
    const rows = buildPrompt(tokenizer, { text: TEXT });
    tokenizer.close();
    const model = await loadTinyModel();
    const direct = generateFrames(model, rows, {
      sampling: { ...DEFAULT_SAMPLING, seed: 5 },
      maxFrames: 12,
      prefillChunk: rows.tokens.length,
    });
    assert.equal(written.finish_reason, direct.finishReason);
    assert.deepEqual(
      written.frames,
      direct.frames.map((frame) => [...frame]),
    );
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
