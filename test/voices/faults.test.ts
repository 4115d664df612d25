// Fault injection in the catalog's file layer: every step of a voice write (and of a removal) is made to fail once
// with ENOSPC and with EIO. Each failure is reported as a named error and leaves the catalog folder exactly as it
// was, byte for byte (no half-written voice, no hidden leftover, the previous voice of that name intact), the
// in-memory catalog unchanged, and the next write succeeds.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { DramaError } from '../../src/errors.ts';
import type { Frame } from '../../src/model/types.ts';
import { CODES_PER_FRAME } from '../../src/shared/frame.ts';
import { type NewVoice, VoiceCatalog } from '../../src/voices/catalog.ts';
import { type Fault, FaultyFiles, temporaryFile } from './faulty-files.ts';

const root = await mkdtemp(join(tmpdir(), 'drama3-catalog-faults-'));
after(() => rm(root, { recursive: true, force: true }));
let folders = 0;

function frames(count: number, salt: number): Frame[] {
  return Array.from({ length: count }, (_, row) =>
    Int32Array.from({ length: CODES_PER_FRAME }, (_, k) => (row * 17 + k * 5 + salt) % (k === 0 ? 4096 : 1024)),
  );
}

const voice = (name: string, salt: number, overwrite = false): NewVoice => ({
  name,
  audio: Uint8Array.from({ length: 4000 + salt }, (_, index) => (index * 13 + salt) & 0xff),
  audioExtension: 'wav',
  text: `Recording number ${salt} of ${name}.`,
  frames: frames(20 + salt, salt),
  overwrite,
});

/** Every entry under `dir`, hidden ones included, with a digest of each file's bytes. */
async function snapshot(dir: string, prefix = ''): Promise<string[]> {
  const lines: string[] = [];
  for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory())
      lines.push(`${prefix}${entry.name}/`, ...(await snapshot(path, `${prefix}${entry.name}/`)));
    else
      lines.push(
        `${prefix}${entry.name} ${createHash('sha256')
          .update(await readFile(path))
          .digest('hex')}`,
      );
  }
  return lines;
}

const describeCatalog = (catalog: VoiceCatalog) =>
  catalog.list().map((item) => `${item.name}: ${item.text} (${item.frames.length} frames, ${item.audioBytes} bytes)`);

const inTemporary = (path: string) => basename(path).startsWith('.tmp-');
const isFolder = (folder: () => string) => (path: string) => path === folder();

interface Step {
  readonly label: string;
  readonly fault: (dir: () => string, name: string) => Omit<Fault, 'code'>;
  /** Only a replacement has this step. */
  readonly replacementOnly?: boolean;
}

const WRITE_STEPS: Step[] = [
  { label: 'creating the temporary folder', fault: () => ({ operation: 'mkdir', path: inTemporary }) },
  { label: 'writing the audio', fault: () => ({ operation: 'write', path: temporaryFile('audio.wav') }) },
  { label: 'fsyncing the audio', fault: () => ({ operation: 'sync', path: temporaryFile('audio.wav') }) },
  { label: 'creating the transcript', fault: () => ({ operation: 'open', path: temporaryFile('transcript.txt') }) },
  { label: 'writing the transcript', fault: () => ({ operation: 'write', path: temporaryFile('transcript.txt') }) },
  { label: 'writing the codes', fault: () => ({ operation: 'write', path: temporaryFile('codes.bin') }) },
  { label: 'fsyncing the codes', fault: () => ({ operation: 'sync', path: temporaryFile('codes.bin') }) },
  { label: 'writing the manifest', fault: () => ({ operation: 'write', path: temporaryFile('voice.json') }) },
  { label: 'fsyncing the manifest', fault: () => ({ operation: 'sync', path: temporaryFile('voice.json') }) },
  { label: 'fsyncing the temporary folder', fault: () => ({ operation: 'sync', path: inTemporary }) },
  {
    label: 'moving the old voice aside',
    replacementOnly: true,
    fault: (dir, name) => ({ operation: 'rename', path: isFolder(() => join(dir(), name)) }),
  },
  { label: 'renaming the voice into place', fault: () => ({ operation: 'rename', path: inTemporary }) },
  { label: 'fsyncing the catalog folder', fault: (dir) => ({ operation: 'sync', path: isFolder(dir) }) },
];

/** A catalog holding `alice` and `bob`, opened through a file system that fails as `fault` says. */
async function prepared(fault: (dir: () => string) => Omit<Fault, 'code'>, code: Fault['code']) {
  const dir = join(root, `catalog-${folders++}`);
  const healthy = await VoiceCatalog.open(dir);
  await healthy.add(voice('alice', 1));
  await healthy.add(voice('bob', 2));
  const faulty = new FaultyFiles({ ...fault(() => dir), code });
  const catalog = await VoiceCatalog.open(dir, { files: faulty.files });
  return { dir, catalog, faulty, before: await snapshot(dir), listed: describeCatalog(catalog) };
}

async function expectUnchanged(setup: Awaited<ReturnType<typeof prepared>>): Promise<void> {
  assert.ok(setup.faulty.hit, 'the fault fired');
  assert.deepEqual(await snapshot(setup.dir), setup.before, 'the catalog folder is byte for byte as it was');
  assert.deepEqual(describeCatalog(setup.catalog), setup.listed, 'the catalog in memory is as it was');
  const reopened = await VoiceCatalog.open(setup.dir);
  assert.deepEqual(reopened.problems, []);
  assert.deepEqual(describeCatalog(reopened), setup.listed, 'a restart sees the catalog as it was');
}

const refused = (code: string, errno: string) => (error: unknown) =>
  error instanceof DramaError && error.code === code && error.message.includes(errno);

describe('a write step that fails leaves the catalog as it was', () => {
  for (const replacing of [false, true]) {
    for (const step of WRITE_STEPS) {
      if (step.replacementOnly === true && !replacing) continue;
      for (const code of ['ENOSPC', 'EIO'] as const) {
        const name = replacing ? 'alice' : 'carol';
        it(`${replacing ? 'replacing' : 'adding'} a voice, ${code} while ${step.label}`, async (t) => {
          const setup = await prepared((dir) => step.fault(dir, name), code);
          await assert.rejects(setup.catalog.add(voice(name, 7, replacing)), refused('VOICE_WRITE_FAILED', code));
          await expectUnchanged(setup);
          const stored = await setup.catalog.add(voice(name, 8, replacing));
          assert.equal(stored.text, voice(name, 8).text, 'the next write succeeds');
          assert.ok(
            (await readdir(setup.dir)).every((entry) => !entry.startsWith('.')),
            'no hidden leftovers',
          );
          t.diagnostic(`${replacing ? 'replace' : 'add'} / ${step.label} / ${code}`);
        });
      }
    }
  }
});

describe('a removal step that fails leaves the voice in place', () => {
  const steps: Step[] = [
    {
      label: 'renaming the voice away',
      fault: (dir) => ({ operation: 'rename', path: isFolder(() => join(dir(), 'bob')) }),
    },
    { label: 'fsyncing the catalog folder', fault: (dir) => ({ operation: 'sync', path: isFolder(dir) }) },
  ];
  for (const step of steps) {
    for (const code of ['ENOSPC', 'EIO'] as const) {
      it(`${code} while ${step.label}`, async () => {
        const setup = await prepared((dir) => step.fault(dir, 'bob'), code);
        await assert.rejects(setup.catalog.remove('bob'), refused('VOICE_REMOVE_FAILED', code));
        await expectUnchanged(setup);
        await setup.catalog.remove('bob');
        assert.equal(setup.catalog.get('bob'), undefined, 'the next removal succeeds');
      });
    }
  }
});

describe('a failure after the new voice is durable does not fail the request', () => {
  it('EIO deleting the replaced folder: the new voice is stored, and the next open removes the leftover', async () => {
    const setup = await prepared(
      () => ({ operation: 'remove', path: (path) => basename(path).startsWith('.old-') }),
      'EIO',
    );
    const stored = await setup.catalog.add(voice('alice', 9, true));
    assert.ok(setup.faulty.hit, 'the fault fired');
    assert.equal(stored.text, voice('alice', 9).text);
    assert.ok(
      (await readdir(setup.dir)).some((entry) => entry.startsWith('.old-alice-')),
      'the old folder is left',
    );
    const reopened = await VoiceCatalog.open(setup.dir);
    assert.equal(reopened.get('alice')?.text, voice('alice', 9).text);
    assert.deepEqual(await readdir(setup.dir), ['alice', 'bob']);
  });
});
