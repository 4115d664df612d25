// A catalog voice on the real `tiny` checkpoint, end to end over HTTP: uploaded once (encoded by the tiny codec),
// spoken twice with the reference cache on — the second request is a hit in /metrics — and both give the bytes of
// a server with the cache off. Replacing the voice drops its cache entry.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { openVoices } from '../../src/cli/voices.ts';
import { Engine } from '../../src/engine/engine.ts';
import { DEFAULT_ENGINE_SETTINGS } from '../../src/engine/engine-core.ts';
import type { RuntimeSpec } from '../../src/engine/load-runtime.ts';
import { buildApp } from '../../src/server/app.ts';
import { audioToolkit } from '../../src/server/audio-toolkit.ts';
import { tinyCheckpointDir } from '../model/tiny-checkpoint.ts';
import { toneWav } from './wav-fixture.ts';

const voicesDir = await mkdtemp(join(tmpdir(), 'drama3-cached-voice-'));
const spec: RuntimeSpec = { kind: 'checkpoint', dir: await tinyCheckpointDir(), prefillChunk: 16 };
const apps: FastifyInstance[] = [];
after(async () => {
  for (const app of apps) await app.close();
  await rm(voicesDir, { recursive: true, force: true });
});

async function server(referenceCacheBytes: number): Promise<FastifyInstance> {
  const engine = await Engine.start({
    runtime: spec,
    settings: { ...DEFAULT_ENGINE_SETTINGS, lanes: 1, prefillChunk: 16, referenceCacheBytes },
    queueLimit: 4,
    thread: 'inline',
  });
  const app = await buildApp({ engine, audio: audioToolkit, ...(await openVoices(voicesDir, spec)) });
  apps.push(app);
  return app;
}

async function speak(app: FastifyInstance, voice: string): Promise<Buffer> {
  const response = await app.inject({
    method: 'POST',
    url: '/v1/audio/speech',
    payload: { input: 'Cached voices speak sooner.', voice, response_format: 'pcm', seed: 5, max_frames: 4 },
  });
  assert.equal(response.statusCode, 200, response.body);
  return response.rawPayload;
}

async function metric(app: FastifyInstance, name: string): Promise<number> {
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  assert.ok(match !== null, `${name} is exported`);
  return Number(match[1]);
}

async function uploadVoice(app: FastifyInstance, text: string, frequency: number): Promise<void> {
  const form = new FormData();
  form.append('name', 'narrator');
  form.append('text', text);
  form.append('overwrite', 'true');
  form.append('audio', new Blob([toneWav(0.5, 24000, frequency)]), 'narrator.wav');
  const request = new Request('http://local/v1/audio/voices', { method: 'POST', body: form });
  const response = await app.inject({
    method: 'POST',
    url: '/v1/audio/voices',
    headers: Object.fromEntries(request.headers),
    payload: Buffer.from(await request.arrayBuffer()),
  });
  assert.equal(response.statusCode, 201, response.body);
}

test('a cached catalog voice gives the bytes of the uncached server; the second request is a hit', async () => {
  const cached = await server(64 * 1024 * 1024);
  await uploadVoice(cached, 'A calm narrator reads this line.', 180);
  const first = await speak(cached, 'narrator');
  const second = await speak(cached, 'narrator');
  assert.equal(await metric(cached, 'drama3_reference_cache_misses_total'), 1);
  assert.equal(await metric(cached, 'drama3_reference_cache_hits_total'), 1);
  assert.equal(await metric(cached, 'drama3_reference_cache_entries'), 1);
  assert.ok((await metric(cached, 'drama3_reference_cache_rows_saved_total')) > 0);
  assert.ok((await metric(cached, 'drama3_reference_cache_bytes')) > 0);
  assert.equal(await metric(cached, 'drama3_reference_cache_capacity_bytes'), 64 * 1024 * 1024);
  assert.equal(await metric(cached, 'drama3_reference_cache_stores_skipped_total'), 0);
  assert.equal(await metric(cached, 'drama3_reference_cache_stores_failed_total'), 0);

  const uncached = await server(0);
  const reference = await speak(uncached, 'narrator');
  assert.ok(reference.length > 0);
  assert.ok(first.equals(reference), 'the miss equals the uncached bytes');
  assert.ok(second.equals(reference), 'the hit equals the uncached bytes');
  assert.ok(!reference.equals(await speak(uncached, 'default')), 'the voice changes the audio');

  await uploadVoice(cached, 'A different narrator now.', 440);
  assert.equal(await metric(cached, 'drama3_reference_cache_entries'), 0, 'replacing the voice dropped its entry');
  await speak(cached, 'narrator');
  assert.equal(await metric(cached, 'drama3_reference_cache_misses_total'), 2, 'the new recording is a miss');
  assert.equal(await metric(cached, 'drama3_reference_cache_entries'), 1);
});
