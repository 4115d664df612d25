// The runtime choice of serve/say: --null-model, --model DIR, or the embedded tiny checkpoint written once, with the
// --backend flag carried to the runtime.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ensureTinyCheckpoint, resolveRuntime } from '../../src/cli/default-model.ts';

test('flags pick the runtime: the null engine, a given folder, or the cached tiny checkpoint', async () => {
  const cacheDir = await mkdtemp(join(tmpdir(), 'drama3-cache-'));
  try {
    assert.deepEqual(await resolveRuntime({ nullModel: true, cacheDir, prefillChunk: 8 }), { kind: 'null' });
    assert.deepEqual(await resolveRuntime({ model: '/some/dir', cacheDir, prefillChunk: 8, backend: 'cuda' }), {
      kind: 'checkpoint',
      dir: '/some/dir',
      prefillChunk: 8,
      backend: 'cuda',
    });
    const spec = await resolveRuntime({ cacheDir, prefillChunk: 8, backend: 'auto' });
    assert.equal(spec.kind, 'checkpoint');
    assert.equal(spec.kind === 'checkpoint' ? spec.backend : '', 'auto', 'the backend flag reaches the runtime');
    const dir = spec.kind === 'checkpoint' ? spec.dir : '';
    assert.ok(dir.startsWith(cacheDir));
    const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
    assert.equal(config.synthetic, true);
    const written = (await stat(join(dir, 'config.json'))).mtimeMs;
    assert.equal(await ensureTinyCheckpoint(cacheDir), dir);
    assert.equal((await stat(join(dir, 'config.json'))).mtimeMs, written, 'written once, then reused');
  } finally {
    await rm(cacheDir, { recursive: true, force: true });
  }
});
