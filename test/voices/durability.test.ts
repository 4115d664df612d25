// Catalog durability: the real server process (`drama3 serve --null-model --voices DIR`) is killed with SIGKILL while
// it writes an uploaded voice (the moment its temporary folder appears), and once after the upload answered. After
// each kill the catalog, opened again, holds the whole voice (its transcript, every frame, the exact audio bytes) or
// none of it — for a new voice and for a replacement of an existing one — and no temporary folder is left.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { VoiceCatalog } from '../../src/voices/catalog.ts';
import { toneWav } from './wav-fixture.ts';

const root = await mkdtemp(join(tmpdir(), 'drama3-durability-'));
const dir = join(root, 'voices');
/** Every server started, so that one a failed test left running is killed and cannot keep the run alive. */
const children: ChildProcess[] = [];
after(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) await killed(child);
  await rm(root, { recursive: true, force: true });
});
const MAIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;

/** Starts the server; resolves with the process and its address once it listens. */
function startServer(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', MAIN, 'serve', '--null-model', '--voices', dir, '--port', '0'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match !== null) resolve({ child, url: match[1]! });
    });
    child.on('exit', (code) => reject(new Error(`the server exited with ${code} before listening: ${output}`)));
  });
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** Polls the catalog folder until a temporary voice folder appears (the write has begun). */
async function temporaryFolderAppears(limitMilliseconds: number): Promise<boolean> {
  const end = performance.now() + limitMilliseconds;
  while (performance.now() < end) {
    const entries = await readdir(dir).catch(() => [] as string[]);
    if (entries.some((entry) => entry.startsWith('.tmp-'))) return true;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return false;
}

function upload(url: string, name: string, text: string, audio: Uint8Array, overwrite = false): Promise<Response> {
  const form = new FormData();
  form.append('name', name);
  form.append('text', text);
  if (overwrite) form.append('overwrite', 'true');
  form.append('audio', new Blob([audio]), 'voice.wav');
  return fetch(`${url}/v1/audio/voices`, { method: 'POST', body: form });
}

/** The voice is absent, or whole: one of the expected (transcript, audio) versions with all its frames. */
async function assertWholeOrNone(name: string, versions: { text: string; audio: Uint8Array }[]): Promise<string> {
  const catalog = await VoiceCatalog.open(dir);
  assert.deepEqual(catalog.problems, []);
  assert.ok(
    (await readdir(dir)).every((entry) => !entry.startsWith('.')),
    'no hidden leftovers',
  );
  const voice = catalog.get(name);
  if (voice === undefined) return 'none';
  const version = versions.findIndex((candidate) => candidate.text === voice.text);
  assert.ok(version >= 0, `unexpected transcript ${voice.text}`);
  const stored = new Uint8Array(await readFile(join(dir, name, voice.audioFile)));
  assert.ok(Buffer.from(stored).equals(Buffer.from(versions[version]!.audio)), 'the audio bytes are the upload');
  assert.equal(
    voice.frames.length,
    Math.floor((((versions[version]!.audio.length - 44) / 2) * (44100 / 24000)) / 2048),
  );
  return `version ${version}`;
}

const FIRST = { text: 'The first recording.', audio: toneWav(60, 24000, 220) };
const SECOND = { text: 'The second recording.', audio: toneWav(70, 24000, 330) };

test('SIGKILL while a new voice is written leaves all of it or none of it', async () => {
  const { child, url } = await startServer();
  const request = upload(url, 'alice', FIRST.text, FIRST.audio).catch(() => undefined);
  assert.ok(await temporaryFolderAppears(20000), 'the write began');
  await killed(child);
  await request;
  const outcome = await assertWholeOrNone('alice', [FIRST]);
  assert.ok(['none', 'version 0'].includes(outcome));
});

test('SIGKILL while a voice is replaced leaves the old or the new one whole', async () => {
  let { child, url } = await startServer();
  const settled = await upload(url, 'bob', FIRST.text, FIRST.audio);
  assert.equal(settled.status, 201);
  await killed(child);
  assert.equal(await assertWholeOrNone('bob', [FIRST]), 'version 0', 'an answered upload survives SIGKILL');
  ({ child, url } = await startServer());
  const request = upload(url, 'bob', SECOND.text, SECOND.audio, true).catch(() => undefined);
  assert.ok(await temporaryFolderAppears(20000), 'the replacement began');
  await killed(child);
  await request;
  assert.ok(['version 0', 'version 1'].includes(await assertWholeOrNone('bob', [FIRST, SECOND])));
});
