// The zip writer and reader: stored entries with 64-byte aligned data and correct CRC-32s (checked against the
// archive's own directory as yauzl reads it), range reads in place, and no file left by an aborted write.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import yauzl from 'yauzl';
import { ZipReader } from '../../src/checkpoint/zip-reader.ts';
import { ZipWriter } from '../../src/checkpoint/zip-writer.ts';
import { DramaError } from '../../src/errors.ts';

let folder = '';
before(async () => {
  folder = await mkdtemp(join(tmpdir(), 'drama3-zip-'));
});
after(async () => {
  await rm(folder, { recursive: true, force: true });
});

const entries: [string, Uint8Array][] = [
  ['archive/data.pkl', Uint8Array.from({ length: 37 }, (_, i) => i)],
  ['archive/data/0', Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) & 0xff)],
  ['archive/a-much-longer-entry-name/that/shifts/the/header', new Uint8Array(0)],
  ['archive/data/1', Uint8Array.from([1, 2, 3])],
];

describe('zip', () => {
  it('writes stored, 64-byte aligned entries with correct CRC-32s, read back in place', async () => {
    const path = join(folder, 'a.zip');
    const writer = await ZipWriter.create(path);
    for (const [name, data] of entries) await writer.add(name, [data.subarray(0, 5), data.subarray(5)]);
    await writer.finish();

    const zip = await yauzl.openPromise(path, { lazyEntries: true });
    const bytes = await readFile(path);
    for await (const entry of zip.eachEntry()) {
      const data = entries.find(([name]) => name === entry.fileName)![1];
      assert.equal(entry.compressionMethod, 0);
      assert.equal(entry.crc32, crc32(data), entry.fileName);
      const { fileDataStart } = await zip.readLocalFileHeaderPromise(entry, { minimal: true });
      assert.equal(fileDataStart % 64, 0, entry.fileName);
      assert.deepEqual(new Uint8Array(bytes.subarray(fileDataStart, fileDataStart + data.byteLength)), data);
    }
    zip.close();

    const reader = await ZipReader.open(path);
    assert.deepEqual(
      reader.names(),
      entries.map(([name]) => name),
    );
    const part = new Uint8Array(10);
    await reader.readStored('archive/data/0', 500, part);
    assert.deepEqual(part, entries[1]![1].subarray(500, 510));
    await assert.rejects(
      reader.readStored('archive/data/0', 995, part),
      (error: unknown) => error instanceof DramaError && error.code === 'ZIP_RANGE_OUT_OF_ENTRY',
    );
    await assert.rejects(
      reader.readWhole('archive/none', 10),
      (error: unknown) => error instanceof DramaError && error.code === 'ZIP_ENTRY_MISSING',
    );
    await reader.close();
  });

  it('leaves nothing behind when aborted', async () => {
    const path = join(folder, 'aborted.zip');
    const writer = await ZipWriter.create(path);
    await writer.add('archive/data/0', [new Uint8Array(100)]);
    await writer.abort();
    assert.deepEqual(
      (await readdir(folder)).filter((name) => name.startsWith('aborted')),
      [],
    );
  });
});
