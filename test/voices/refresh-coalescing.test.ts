// Many requests resolving voices at once while the catalog's view is stale share one folder scan: a scan per
// request, queued one behind the other, held the last request for every scan before its own (under load, tens of
// seconds before its prompt was even built).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { VoiceCatalog } from '../../src/voices/catalog.ts';
import { type CatalogFileSystem, nodeFileSystem } from '../../src/voices/synced-files.ts';

const root = await mkdtemp(join(tmpdir(), 'drama3-refresh-'));
after(() => rm(root, { recursive: true, force: true }));

/** node:fs with every folder listing counted and made slow (a loaded machine's file system). */
function countedFiles(): { files: CatalogFileSystem; listings: () => number } {
  let listings = 0;
  const files: CatalogFileSystem = {
    ...nodeFileSystem,
    readdir: async (path) => {
      listings += 1;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return nodeFileSystem.readdir(path);
    },
  };
  return { files, listings: () => listings };
}

test('concurrent refreshIfOlder calls on a stale catalog share one scan', async () => {
  const counted = countedFiles();
  const catalog = await VoiceCatalog.open(join(root, 'voices'), { files: counted.files });
  await new Promise((resolve) => setTimeout(resolve, 30));
  const before = counted.listings();
  const began = performance.now();
  await Promise.all(Array.from({ length: 20 }, () => catalog.refreshIfOlder(25)));
  const scans = counted.listings() - before;
  assert.equal(scans, 1, `20 concurrent callers made ${scans} scans`);
  assert.ok(performance.now() - began < 20 * 20, 'the callers waited for one scan, not for twenty in a row');
});

test('a caller after the shared scan is older than the bound gets a fresh scan', async () => {
  const counted = countedFiles();
  const catalog = await VoiceCatalog.open(join(root, 'voices-2'), { files: counted.files });
  await new Promise((resolve) => setTimeout(resolve, 30));
  const before = counted.listings();
  await catalog.refreshIfOlder(25);
  await new Promise((resolve) => setTimeout(resolve, 30));
  await catalog.refreshIfOlder(25);
  assert.equal(counted.listings() - before, 2);
});
