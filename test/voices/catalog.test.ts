// The catalog on disk: a voice round-trips through a restart byte for byte; names with path tricks, empty or long
// transcripts, oversized audio and duplicates are refused by name; a corrupt folder is reported by name and skipped;
// leftovers of an interrupted write or replacement are cleaned up or restored at start.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { Frame } from '../../src/model/types.ts';
import { CODES_PER_FRAME } from '../../src/shared/frame.ts';
import { VoiceCatalog } from '../../src/voices/catalog.ts';
import { checkVoiceName, MAX_VOICE_AUDIO_BYTES } from '../../src/voices/names.ts';

const root = await mkdtemp(join(tmpdir(), 'drama3-catalog-'));
after(() => rm(root, { recursive: true, force: true }));
let folders = 0;
const freshDir = () => join(root, `catalog-${folders++}`);

function frames(count: number, salt: number): Frame[] {
  return Array.from({ length: count }, (_, row) =>
    Int32Array.from({ length: CODES_PER_FRAME }, (_, k) => (row * 31 + k * 7 + salt) % (k === 0 ? 4096 : 1024)),
  );
}

const AUDIO = new Uint8Array([82, 73, 70, 70, 1, 2, 3, 4, 5]);
const voice = (name: string, overrides = {}) => ({
  name,
  audio: AUDIO,
  audioExtension: 'wav',
  text: `Transcript of ${name}.`,
  frames: frames(12, name.length),
  ...overrides,
});

test('a voice survives a restart: transcript, frames and audio bytes', async () => {
  const dir = freshDir();
  const catalog = await VoiceCatalog.open(dir);
  await catalog.add(voice('alice'));
  await catalog.add(voice('bob_2.v1'));
  const reopened = await VoiceCatalog.open(dir);
  assert.deepEqual(reopened.problems, []);
  assert.deepEqual(
    reopened.list().map((item) => item.name),
    ['alice', 'bob_2.v1'],
  );
  const alice = reopened.get('alice')!;
  assert.equal(alice.text, 'Transcript of alice.');
  assert.deepEqual(
    alice.frames.map((frame) => Array.from(frame)),
    frames(12, 5).map((frame) => Array.from(frame)),
  );
  assert.deepEqual(new Uint8Array(await readFile(join(dir, 'alice', 'audio.wav'))), AUDIO);
  assert.deepEqual(await readdir(dir), ['alice', 'bob_2.v1'], 'no temporary folder is left');
});

test('names with path tricks or odd characters are refused by name', () => {
  for (const name of ['../x', '..', '.hidden', 'a/b', 'a\\b', '', 'x'.repeat(65), 'voice name', 'a..b', 'é']) {
    assert.throws(() => checkVoiceName(name), { code: 'VOICE_NAME_INVALID' }, JSON.stringify(name));
  }
  for (const name of ['a', 'Alice-2', 'x.y_z', '0'.repeat(64)]) assert.equal(checkVoiceName(name), name);
});

test('a duplicate, a bad name, an empty or long transcript and oversized audio are refused; nothing is written', async () => {
  const dir = freshDir();
  const catalog = await VoiceCatalog.open(dir);
  await catalog.add(voice('alice'));
  await assert.rejects(catalog.add(voice('alice')), { code: 'VOICE_EXISTS', kind: 'conflict' });
  await assert.rejects(catalog.add(voice('../x')), { code: 'VOICE_NAME_INVALID' });
  await assert.rejects(catalog.add(voice('empty', { text: '  ' })), { code: 'VOICE_TEXT_EMPTY' });
  await assert.rejects(catalog.add(voice('long', { text: 'x'.repeat(4097) })), { code: 'VOICE_TEXT_TOO_LONG' });
  await assert.rejects(catalog.add(voice('big', { audio: new Uint8Array(MAX_VOICE_AUDIO_BYTES + 1) })), {
    code: 'VOICE_AUDIO_TOO_LARGE',
    kind: 'too_large',
  });
  await assert.rejects(catalog.add(voice('silent', { frames: [] })), { code: 'VOICE_AUDIO_TOO_SHORT' });
  await assert.rejects(catalog.add(voice('endless', { frames: frames(2049, 1) })), { code: 'VOICE_AUDIO_TOO_LONG' });
  assert.deepEqual(await readdir(dir), ['alice']);
});

test('overwrite replaces a voice; remove deletes it; both report the change', async () => {
  const dir = freshDir();
  const catalog = await VoiceCatalog.open(dir);
  const changes: string[] = [];
  catalog.onChange((change) => changes.push(`${change.type} ${change.name}`));
  await catalog.add(voice('alice'));
  await catalog.add(voice('alice', { text: 'New words.', overwrite: true }));
  assert.equal((await VoiceCatalog.open(dir)).get('alice')?.text, 'New words.');
  await catalog.remove('alice');
  await assert.rejects(catalog.remove('alice'), { code: 'VOICE_NOT_FOUND', kind: 'not_found' });
  assert.deepEqual(changes, ['added alice', 'replaced alice', 'removed alice']);
  assert.deepEqual(await readdir(dir), []);
  assert.equal((await VoiceCatalog.open(dir)).get('alice'), undefined);
});

test('corrupt folders are reported by name and skipped; the good voice still loads', async () => {
  const dir = freshDir();
  const catalog = await VoiceCatalog.open(dir);
  for (const name of ['good', 'truncated', 'badjson', 'renamed', 'edited']) await catalog.add(voice(name));
  const codes = join(dir, 'truncated', 'codes.bin');
  await writeFile(codes, (await readFile(codes)).subarray(0, 40));
  await writeFile(join(dir, 'badjson', 'voice.json'), '{"format": ');
  await rename(join(dir, 'renamed'), join(dir, 'other'));
  await writeFile(join(dir, 'edited', 'transcript.txt'), 'something else');
  await mkdir(join(dir, 'no-manifest'));
  const reopened = await VoiceCatalog.open(dir);
  assert.deepEqual(
    reopened.list().map((item) => item.name),
    ['good'],
  );
  const problems = Object.fromEntries(reopened.problems.map((problem) => [problem.folder, problem.reason]));
  assert.deepEqual(Object.keys(problems).sort(), ['badjson', 'edited', 'no-manifest', 'other', 'truncated']);
  assert.match(problems.truncated!, /codes\.bin/);
  assert.match(problems.badjson!, /not JSON/);
  assert.match(problems.other!, /folder name/);
  assert.match(problems.edited!, /transcript/);
});

test('start-up removes a temporary folder and restores a voice moved aside by an interrupted replacement', async () => {
  const dir = freshDir();
  const catalog = await VoiceCatalog.open(dir);
  await catalog.add(voice('alice'));
  await catalog.add(voice('bob'));
  await mkdir(join(dir, '.tmp-carol-0badf00d'));
  await writeFile(join(dir, '.tmp-carol-0badf00d', 'audio.wav'), 'partial');
  await rename(join(dir, 'alice'), join(dir, '.old-alice-12345678'));
  await rename(join(dir, 'bob'), join(dir, '.del-bob-12345678'));
  const reopened = await VoiceCatalog.open(dir);
  assert.deepEqual(
    reopened.list().map((item) => item.name),
    ['alice'],
  );
  assert.deepEqual(await readdir(dir), ['alice']);
});

test('a running catalog takes in voices another process added, replaced or removed', async () => {
  const dir = freshDir();
  const server = await VoiceCatalog.open(dir);
  const commandLine = await VoiceCatalog.open(dir);
  const changes: string[] = [];
  server.onChange((change) => changes.push(`${change.type} ${change.name}`));
  await commandLine.add(voice('alice'));
  await assert.rejects(server.add(voice('alice')), { code: 'VOICE_EXISTS' }, 'the write looks at the folder first');
  await commandLine.add(voice('alice', { text: 'Replaced words.', overwrite: true }));
  await server.refresh();
  assert.equal(server.get('alice')?.text, 'Replaced words.');
  await commandLine.remove('alice');
  await server.refresh();
  assert.equal(server.get('alice'), undefined);
  assert.deepEqual(changes, ['added alice', 'replaced alice', 'removed alice']);
});
