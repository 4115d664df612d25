// Where the decode thread decodes, it alone reads codec.pth: the engine thread's runtime holds the codec's rate and
// frame from its config, finishes loading when that thread's codec is ready, and fails with that thread's error. A
// worker engine on the tiny checkpoint still speaks, its audio decoded by the decode thread's codec.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Engine } from '../../src/engine/engine.ts';
import { DEFAULT_ENGINE_SETTINGS } from '../../src/engine/engine-core.ts';
import { loadRuntime } from '../../src/engine/load-runtime.ts';
import { DramaError, isDramaError } from '../../src/errors.ts';
import { tinyCheckpointDir } from '../model/tiny-checkpoint.ts';
import { job, runToEnd } from './support.ts';

// Made once at the top level: its folder is removed after the file's tests.
const tiny = await tinyCheckpointDir();
const folders: string[] = [];
after(() => Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true }))));

/** The tiny checkpoint without its codec.pth: what the engine thread may read when it does not decode. */
async function tinyWithoutCodec(): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'drama3-no-codec-'));
  folders.push(folder);
  for (const name of await readdir(tiny)) {
    if (name !== 'codec.pth') await symlink(join(tiny, name), join(folder, name));
  }
  return folder;
}

test('where the decode thread decodes, the runtime does not read codec.pth and opens no stream', async () => {
  const dir = await tinyWithoutCodec();
  const runtime = await loadRuntime(
    { kind: 'checkpoint', dir, backend: 'cpu', prefillChunk: 16 },
    { decodeThread: Promise.resolve() },
  );
  assert.equal(runtime.codec.sampleRate, 44100);
  assert.equal(runtime.codec.frameLength, 2048);
  assert.ok(runtime.notices?.some((notice) => /^loaded together: .* the codec in \d+\.\d s/.test(notice)));
  assert.throws(
    () => runtime.codec.openStream(),
    (error: unknown) => isDramaError(error) && error.code === 'CODEC_IN_DECODE_THREAD',
  );
});

test("a decode thread that fails to load its codec fails the runtime's load with its error", async () => {
  const refused = new DramaError('CODEC_TENSOR_SHAPE', 'the decode thread refused codec.pth', {
    kind: 'bad_checkpoint',
  });
  const decodeThread = Promise.reject(refused);
  // The engine worker waits on the same promise beside the load, so its refusal is always handled.
  decodeThread.catch(() => {});
  await assert.rejects(
    loadRuntime({ kind: 'checkpoint', dir: tiny, backend: 'cpu' }, { decodeThread }),
    (error: unknown) => error === refused,
  );
});

test('a worker engine on the tiny checkpoint plans its lanes and speaks through its decode thread', async () => {
  const engine = await Engine.start({
    runtime: { kind: 'checkpoint', dir: tiny, backend: 'cpu', prefillChunk: 16 },
    settings: { ...DEFAULT_ENGINE_SETTINGS, lanes: 2, prefillChunk: 16 },
    queueLimit: 2,
    thread: 'worker',
  });
  try {
    const planned =
      /^lanes planned: 2 of \d+ rows in \d+\.\d s \(slots in \d+\.\d\d s, the first prefill and step in \d+\.\d\d s\)$/;
    assert.ok(engine.info.notices.some((notice) => planned.test(notice)));
    const built = /^model: config and weights checked in \d+\.\d\d s before the stream, built in \d+\.\d\d s after it$/;
    assert.ok(engine.info.notices.some((notice) => built.test(notice)));
    assert.ok(engine.info.notices.some((notice) => notice.startsWith('loaded together: the model in ')));
    const outcome = await runToEnd(engine, job('Hello.', { maxFrames: 3 }));
    assert.equal(outcome.last.type, 'finished', JSON.stringify(outcome.last));
    const frames = outcome.last.type === 'finished' ? outcome.last.usage.outputFrames : 0;
    assert.ok(frames >= 1);
    assert.equal(outcome.pcm.length, frames * 2048);
    assert.ok(outcome.pcm.every(Number.isFinite));
  } finally {
    await engine.close();
  }
});
