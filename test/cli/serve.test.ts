// The command line as users run it: `drama3 serve` in its own process (engine in a worker thread under tsx) answers
// a WAV request; `drama3 say` writes a file. Both on the built-in test engine (--null-model) so they stay fast.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const MAIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;

function drama3(args: string[]) {
  return spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
}

test('drama3 serve prints its URL, warns about synthetic weights, and serves a WAV', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'drama3-serve-'));
  const child = drama3(['serve', '--null-model', '--port', '0', '--voices', join(folder, 'voices')]);
  try {
    let output = '';
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const listening = /listening on (http:\/\/\S+)/.exec(output);
        if (listening !== null && output.includes('Open ')) resolve(listening[1]!);
      });
      child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${output}`)));
    });
    assert.match(output, /WARNING: synthetic weights/);
    const reply = await fetch(`${url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Hello!', response_format: 'wav' }),
    });
    assert.equal(reply.status, 200);
    const bytes = Buffer.from(await reply.arrayBuffer());
    assert.equal(bytes.toString('latin1', 0, 4), 'RIFF');
    assert.equal(bytes.readUInt32LE(24), 44100);
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { synthetic: boolean }[] };
    assert.equal(models.data[0]!.synthetic, true);
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    await rm(folder, { recursive: true, force: true });
  }
});

test('drama3 say writes the frames it reports into a WAV file', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'drama3-say-'));
  try {
    const out = join(folder, 'hello.wav');
    const child = drama3(['say', '--null-model', '--out', out, 'hello there']);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise((resolve) => child.on('exit', resolve));
    assert.equal(code, 0, stderr);
    const frames = Number(/(\d+) frames/.exec(stderr)![1]);
    const bytes = await readFile(out);
    assert.equal(bytes.toString('latin1', 8, 12), 'WAVE');
    assert.equal((bytes.length - 44) / 2, frames * 2048);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});

test('drama3 say --stream writes raw pcm to stdout as it is generated', async () => {
  const child = drama3(['say', '--null-model', '--stream', '--format', 'pcm', 'streamed words']);
  const chunks: Buffer[] = [];
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise((resolve) => child.on('exit', resolve));
  assert.equal(code, 0, stderr);
  const frames = Number(/(\d+) frames/.exec(stderr)![1]);
  assert.equal(Buffer.concat(chunks).length, frames * 2048 * 2);
});
