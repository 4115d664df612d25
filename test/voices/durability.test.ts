// Catalog durability: the real server process (`drama3 serve --null-model --voices DIR`) is killed with SIGKILL at
// each step of writing an uploaded voice, and once after the upload answered. The server itself says when it reached
// the step (pause-catalog-write.ts holds the chosen file call and prints a line), so the kill lands exactly there
// however slow the machine is. After each kill the catalog, opened again, holds exactly the expected version of the
// voice, whole (its transcript, every frame, the exact audio bytes), or none of it — for a new voice and for a
// replacement of an existing one — and no temporary folder is left.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { VoiceCatalog } from '../../src/voices/catalog.ts';
import { toneWav } from './wav-fixture.ts';

const root = await mkdtemp(join(tmpdir(), 'drama3-durability-'));
let catalogs = 0;
/** Every server started, so that one a failed test left running is killed and cannot keep the run alive. */
const children: ChildProcess[] = [];
after(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) await killed(child);
  await rm(root, { recursive: true, force: true });
});
const MAIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;
const PAUSE = new URL('./pause-catalog-write.ts', import.meta.url).pathname;
/** A bound on start-up plus one upload, so that a broken server fails the test instead of hanging it. */
const SIGNAL_LIMIT_MILLISECONDS = 240_000;

interface Pause {
  readonly operation: 'open' | 'rename' | 'rm';
  /** A regular expression the call's (first) path must match. */
  readonly path: string;
}

interface Server {
  readonly child: ChildProcess;
  readonly url: string;
  /** Resolves with the server's "catalog write paused before ..." line. */
  readonly paused: Promise<string>;
}

/** Starts the server on `dir` (pausing the catalog write where `pause` says); resolves once it listens. */
function startServer(dir: string, pause?: Pause): Promise<Server> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', PAUSE, MAIN, 'serve', '--null-model', '--voices', dir, '--port', '0'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: pause === undefined ? process.env : { ...process.env, PAUSE_CATALOG_WRITE: JSON.stringify(pause) },
    },
  );
  children.push(child);
  let output = '';
  const lines = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const look = () => {
        const match = pattern.exec(output);
        if (match !== null) resolve(match);
      };
      child.stdout!.on('data', look);
      child.once('exit', (code, signal) =>
        reject(new Error(`the server exited (${code ?? signal}) before printing ${pattern}: ${output}`)),
      );
      look();
    });
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const paused = lines(/catalog write paused before .*/).then((match) => match[0]);
  paused.catch(() => {});
  return lines(/listening on (http:\/\/\S+)/).then((match) => ({ child, url: match[1]!, paused }));
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** Waits for the server's own signal that the write reached the paused step; an upload that ends first fails. */
async function pausedAt(server: Server, request: Promise<Response | undefined>): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('no pause signal within the limit')), SIGNAL_LIMIT_MILLISECONDS);
  });
  const answered = request.then((response) => {
    throw new Error(`the upload answered ${response?.status} without reaching the paused step`);
  });
  try {
    return await Promise.race([server.paused, answered, limit]);
  } finally {
    clearTimeout(timer);
  }
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
async function assertWholeOrNone(
  dir: string,
  name: string,
  versions: { text: string; audio: Uint8Array }[],
): Promise<string> {
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

const FIRST = { text: 'The first recording.', audio: toneWav(6, 24000, 220) };
const SECOND = { text: 'The second recording.', audio: toneWav(7, 24000, 330) };

/** A pattern for a file of that name inside a voice's temporary folder. */
const TEMPORARY_FILE = (file: string) => String.raw`/\.tmp-[^/]+/${file.replace('.', '\\.')}$`;

/** Kill points of a new voice's write, and what a restart must then find. */
const NEW_VOICE_STEPS: { label: string; pause: Pause; outcome: string }[] = [
  {
    label: 'before the audio is written',
    pause: { operation: 'open', path: TEMPORARY_FILE('audio.wav') },
    outcome: 'none',
  },
  {
    label: 'before the rename into place',
    pause: { operation: 'rename', path: String.raw`/\.tmp-[^/]+$` },
    outcome: 'none',
  },
  {
    label: 'before the catalog folder is fsynced',
    pause: { operation: 'open', path: '/voices$' },
    outcome: 'version 0',
  },
];

/** Kill points of a replacement of version 0 by version 1. */
const REPLACEMENT_STEPS: { label: string; pause: Pause; outcome: string }[] = [
  {
    label: 'before the old voice is moved aside',
    pause: { operation: 'rename', path: '/voices/bob$' },
    outcome: 'version 0',
  },
  {
    label: 'between the two renames',
    pause: { operation: 'rename', path: String.raw`/\.tmp-[^/]+$` },
    outcome: 'version 0',
  },
  {
    label: 'before the old folder is deleted',
    pause: { operation: 'rm', path: String.raw`/\.old-bob-` },
    outcome: 'version 1',
  },
];

const freshCatalog = () => join(root, `catalog-${catalogs++}`, 'voices');

for (const step of NEW_VOICE_STEPS) {
  test(`SIGKILL ${step.label} of a new voice leaves ${step.outcome === 'none' ? 'none' : 'all'} of it`, async (t) => {
    const dir = freshCatalog();
    const server = await startServer(dir, step.pause);
    const request = upload(server.url, 'alice', FIRST.text, FIRST.audio).catch(() => undefined);
    t.diagnostic(await pausedAt(server, request));
    await killed(server.child);
    await request;
    assert.equal(await assertWholeOrNone(dir, 'alice', [FIRST]), step.outcome);
  });
}

const seeded = freshCatalog();

test('an answered upload survives SIGKILL', async () => {
  const { child, url } = await startServer(seeded);
  const settled = await upload(url, 'bob', FIRST.text, FIRST.audio);
  assert.equal(settled.status, 201);
  await killed(child);
  assert.equal(await assertWholeOrNone(seeded, 'bob', [FIRST]), 'version 0');
});

for (const step of REPLACEMENT_STEPS) {
  test(`SIGKILL ${step.label} of a replacement leaves ${step.outcome} whole`, async (t) => {
    const dir = freshCatalog();
    await cp(seeded, dir, { recursive: true });
    const server = await startServer(dir, step.pause);
    const request = upload(server.url, 'bob', SECOND.text, SECOND.audio, true).catch(() => undefined);
    t.diagnostic(await pausedAt(server, request));
    await killed(server.child);
    await request;
    assert.equal(await assertWholeOrNone(dir, 'bob', [FIRST, SECOND]), step.outcome);
  });
}
