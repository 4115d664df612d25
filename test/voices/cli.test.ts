// `drama3 voices add | list | rm` as a user runs them: a voice added from a file is listed and removed; a bad name
// exits with status 1 and its error code, leaving the catalog as it was.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { toneWav } from './wav-fixture.ts';

const root = await mkdtemp(join(tmpdir(), 'drama3-voices-cli-'));
after(() => rm(root, { recursive: true, force: true }));
const MAIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;
const catalog = join(root, 'voices');

function drama3(...args: string[]) {
  const result = spawnSync(process.execPath, ['--import', 'tsx', MAIN, 'voices', ...args, '--voices', catalog], {
    encoding: 'utf8',
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

test('voices add, list and rm; a bad name fails by name', async () => {
  const audio = join(root, 'alice.wav');
  await writeFile(audio, toneWav(1));
  const added = drama3('add', 'alice', '--audio', audio, '--text', 'Hello, I am Alice.', '--null-model');
  assert.equal(added.status, 0, added.stderr);
  assert.match(added.stdout, /added voice 'alice': 21 frames/);

  const listed = drama3('list');
  assert.match(listed.stdout, /^alice\t\S+\t21 frames \(1\.0 s\)\tHello, I am Alice\.$/m);

  const sneaky = drama3('add', '../x', '--audio', audio, '--text', 'Sneaky.', '--null-model');
  assert.equal(sneaky.status, 1);
  assert.match(sneaky.stderr, /VOICE_NAME_INVALID/);
  assert.deepEqual(await readdir(catalog), ['alice']);

  const removed = drama3('rm', 'alice');
  assert.equal(removed.status, 0, removed.stderr);
  assert.deepEqual(await readdir(catalog), []);
});
