// The server on the real `tiny` synthetic checkpoint (cpu model, codec and tokenizer): the openai client gets audio
// of frames × 2048 samples, the same seed gives the same bytes, and 4 requests served together on 4 lanes give the
// bytes of the same 4 served one at a time (contracts 1 and 3 through the real model's batched frame step).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { ensureTinyCheckpoint } from '../../src/cli/default-model.ts';
import { Engine } from '../../src/engine/engine.ts';
import { DEFAULT_ENGINE_SETTINGS } from '../../src/engine/engine-core.ts';
import { buildApp } from '../../src/server/app.ts';
import { audioToolkit } from '../../src/server/audio-toolkit.ts';

let cacheDir: string;
let app: FastifyInstance;
before(async () => {
  cacheDir = await mkdtemp(join(tmpdir(), 'drama3-tiny-'));
  const dir = await ensureTinyCheckpoint(cacheDir);
  const engine = await Engine.start({
    runtime: { kind: 'checkpoint', dir, prefillChunk: 16 },
    settings: { ...DEFAULT_ENGINE_SETTINGS, lanes: 4 },
    queueLimit: 4,
    thread: 'inline',
  });
  app = await buildApp({ engine, audio: audioToolkit });
});
after(async () => {
  await app.close();
  await rm(cacheDir, { recursive: true, force: true });
});

const TEXTS = [
  'Hello there.',
  'A second, somewhat longer sentence to speak.',
  'Three.',
  'And the fourth one, with 42 apples.',
];

function speak(input: string, seed: number) {
  return app.inject({
    method: 'POST',
    url: '/v1/audio/speech',
    payload: { input, response_format: 'pcm', sample_rate: 44100, seed, max_frames: 4 },
  });
}

test('tiny checkpoint: /v1/models says synthetic; a reply has frames × 2048 samples and repeats with its seed', async () => {
  const model = (await app.inject({ method: 'GET', url: '/v1/models' })).json().data[0];
  assert.equal(model.synthetic, true);
  assert.equal(model.speech.backend, 'cpu', 'tiny runs on the cpu backend');
  const first = await speak(TEXTS[0]!, 3);
  assert.equal(first.statusCode, 200);
  assert.equal(first.headers['x-output-frames'], '4');
  assert.equal(first.rawPayload.length, 4 * 2048 * 2);
  const again = await speak(TEXTS[0]!, 3);
  assert.ok(again.rawPayload.equals(first.rawPayload));
  const reseeded = await speak(TEXTS[0]!, 4);
  assert.ok(!reseeded.rawPayload.equals(first.rawPayload));
});

test('tiny checkpoint: 4 requests together on 4 lanes equal the same 4 served alone', async () => {
  const alone: Buffer[] = [];
  for (const [index, text] of TEXTS.entries()) alone.push((await speak(text, index)).rawPayload);
  const together = await Promise.all(TEXTS.map((text, index) => speak(text, index)));
  for (const [index, reply] of together.entries()) {
    assert.equal(reply.statusCode, 200);
    assert.ok(reply.rawPayload.equals(alone[index]!), `request ${index} differs when batched`);
  }
});
