import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, open, readdir, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ZipWriter } from '../../src/checkpoint/zip-writer.ts';
import { resolveRuntime } from '../../src/cli/default-model.ts';
import { runInspect } from '../../src/cli/inspect.ts';
import { synthesizeCheckpoint } from '../../src/synth/synthesize.ts';

const MAIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;

/** `drama3 ARGS...` as a process: status and both streams, killed if it runs past 60 s. */
function drama3(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', MAIN, ...args], { timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ status: error === null ? 0 : (error.code as number | null), stdout, stderr }),
    );
  });
}

const TARGET = 'model.layers.0.linear_attn.in_proj_qkv.weight';

/** Rewrites one tensor's shape inside a shard's JSON header, keeping the header's byte length. */
async function rewriteShape(dir: string, name: string, shape: number[]): Promise<void> {
  for (const file of (await readdir(dir)).filter((entry) => entry.endsWith('.safetensors'))) {
    const handle = await open(join(dir, file), 'r+');
    try {
      const prefix = Buffer.alloc(8);
      await handle.read(prefix, 0, 8, 0);
      const length = Number(prefix.readBigUInt64LE(0));
      const header = Buffer.alloc(length);
      await handle.read(header, 0, length, 8);
      const json = JSON.parse(header.toString('utf8')) as Record<string, { shape: number[] }>;
      if (json[name] === undefined) continue;
      json[name].shape = shape;
      const text = JSON.stringify(json);
      assert.ok(text.length <= length, 'the new header must fit in the old one');
      await handle.write(Buffer.from(text.padEnd(length, ' ')), 0, length, 8);
      return;
    } finally {
      await handle.close();
    }
  }
  throw new Error(`${name} is in no shard`);
}

async function inspect(dir: string, json = false): Promise<{ status: number; output: string }> {
  const lines: string[] = [];
  const status = await runInspect(dir, { json }, (line) => lines.push(line));
  return { status, output: lines.join('\n') };
}

describe('drama3 inspect', () => {
  let root: string;
  let dir: string;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'drama3-inspect-'));
    dir = join(root, 'tiny');
    await synthesizeCheckpoint(dir, { preset: 'tiny', seed: 5, experts: 'fp8' });
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  test('a fresh tiny checkpoint prints OK with its counts and says it is synthetic', async () => {
    const { status, output } = await inspect(dir);
    assert.equal(status, 0, output);
    assert.match(output, /synthetic: {2}yes \(.*speaks noise/);
    assert.match(output, /prefix: {5}model\./);
    assert.match(output, /tensors: {4}715 \(BF16 331, F8_E4M3 192, F32 192\)/);
    assert.match(output, /\nOK$/);
    const report = JSON.parse((await inspect(dir, true)).output);
    assert.equal(report.ok, true);
    assert.deepEqual(report.weights.countsByDtype, { BF16: 331, F8_E4M3: 192, F32: 192 });
  });

  test('one changed shape in a shard header exits 1 naming the tensor and both shapes', async () => {
    await rewriteShape(dir, TARGET, [64, 128]);
    const { status, output } = await inspect(dir);
    assert.equal(status, 1);
    assert.ok(output.includes(`mismatched ${TARGET}: expected BF16 [128, 64], found BF16 [64, 128]`), output);
    assert.match(output, /FAILED: 1 finding/);
    const report = JSON.parse((await inspect(dir, true)).output);
    assert.equal(report.ok, false);
    assert.deepEqual(report.weights.mismatched, [
      { name: TARGET, expected: { dtypes: ['BF16'], shape: [128, 64] }, actual: report.weights.mismatched[0].actual },
    ]);
    assert.deepEqual(report.weights.mismatched[0].actual.shape, [64, 128]);
    await rewriteShape(dir, TARGET, [128, 64]);
    assert.equal((await inspect(dir)).status, 0);
  });

  test('a missing codec.pth is a finding', async () => {
    await rename(join(dir, 'codec.pth'), join(root, 'codec.pth'));
    const { status, output } = await inspect(dir);
    assert.equal(status, 1);
    assert.match(output, /codec: codec\.pth is missing/);
    await rename(join(root, 'codec.pth'), join(dir, 'codec.pth'));
  });

  test('a folder that is no checkpoint exits 1 with the refusal code', async () => {
    const { status, output } = await inspect(join(root, 'absent'));
    assert.equal(status, 1);
    assert.match(output, /^CONFIG_NOT_FOUND: /);
    const json = JSON.parse((await inspect(join(root, 'absent'), true)).output);
    assert.equal(json.error.code, 'CONFIG_NOT_FOUND');
  });

  test('a shard that is a FIFO or a folder is refused by name, at once, by inspect and by serve', async () => {
    const shard = (await readdir(dir)).find((entry) => entry.endsWith('.safetensors'))!;
    await rename(join(dir, shard), join(root, shard));
    try {
      execFileSync('mkfifo', [join(dir, shard)]);
      const { status, output } = await inspect(dir);
      assert.equal(status, 1);
      assert.match(output, /^CHECKPOINT_NOT_REGULAR_FILE: .* is a FIFO, not a regular file$/);
      await assert.rejects(
        resolveRuntime({ model: dir, cacheDir: root, prefillChunk: 8 }),
        (error: Error & { code?: string }) => error.code === 'CHECKPOINT_NOT_REGULAR_FILE',
      );
      const inspected = await drama3(['inspect', dir]);
      assert.equal(inspected.status, 1, inspected.stderr);
      assert.match(inspected.stdout, /^CHECKPOINT_NOT_REGULAR_FILE: /);
      assert.doesNotMatch(inspected.stderr, /\n\s+at /, 'no stack');
      const served = await drama3(['serve', '--model', dir, '--port', '0', '--voices', join(root, 'voices')]);
      assert.equal(served.status, 1, 'serve exits instead of waiting on the FIFO');
      assert.match(served.stderr, /the model could not be loaded: CHECKPOINT_NOT_REGULAR_FILE: .* is a FIFO/);
      assert.doesNotMatch(served.stderr, /\n\s+at /, 'no stack');
      await rm(join(dir, shard));
      await mkdir(join(dir, shard));
      const folder = await inspect(dir);
      assert.equal(folder.status, 1);
      assert.match(folder.output, /^CHECKPOINT_NOT_REGULAR_FILE: .* is a folder, not a regular file$/);
    } finally {
      await rm(join(dir, shard), { recursive: true, force: true });
      await rename(join(root, shard), join(dir, shard));
    }
    assert.equal((await inspect(dir)).status, 0);
  });

  test('a codec.pth whose pickle holds invalid UTF-8 is a named finding, not a crash', async () => {
    await rename(join(dir, 'codec.pth'), join(root, 'codec.pth'));
    try {
      const zip = await ZipWriter.create(join(dir, 'codec.pth'));
      await zip.add('archive/data.pkl', [Uint8Array.from([0x80, 0x02, 0x58, 2, 0, 0, 0, 0xff, 0xfe, 0x2e])]);
      await zip.finish();
      const { status, output } = await inspect(dir);
      assert.equal(status, 1);
      assert.match(output, /codec: PICKLE_BAD_UTF8: .*not valid UTF-8/);
    } finally {
      await rename(join(root, 'codec.pth'), join(dir, 'codec.pth'));
    }
  });
});
