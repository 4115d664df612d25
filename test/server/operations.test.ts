// Discovery and operations routes: /health while loading and when ready, /v1/models with the speech limits,
// /openapi.json, /metrics, and the page at /.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { Engine } from '../../src/engine/engine.ts';
import { buildApp } from '../../src/server/app.ts';
import { audioToolkit } from '../../src/server/audio-toolkit.ts';
import { tinyConfig } from '../model/tiny-config.ts';
import { startTestServer } from './support.ts';

test('while the engine loads, /health and speech answer 503 with Retry-After in the envelope', async () => {
  const app = await buildApp({ engine: new Promise<Engine>(() => {}), audio: audioToolkit });
  const health = await app.inject({ method: 'GET', url: '/health' });
  assert.equal(health.statusCode, 503);
  assert.equal(health.headers['retry-after'], '1');
  assert.equal(health.json().error.code, 'MODEL_LOADING');
  const speech = await app.inject({
    method: 'POST',
    url: '/v1/audio/speech',
    payload: { input: 'hi', response_format: 'pcm' },
  });
  assert.equal(speech.statusCode, 503);
  await app.close();
});

test('/v1/models lists the model with its speech limits, its backend and the synthetic flag', async () => {
  const server = await startTestServer({
    settings: { maxFrames: 1000, maxInputCodePoints: 2000, lanes: 3, memoryRows: 9000 },
    model: { contextRows: 5000 },
  });
  try {
    const models = (await server.app.inject({ method: 'GET', url: '/v1/models' })).json();
    assert.equal(models.object, 'list');
    const [model] = models.data;
    assert.equal(model.synthetic, true);
    assert.match(model.notice, /synthetic weights/);
    assert.deepEqual(model.speech, {
      context_window: 5000,
      max_prompt_rows: 4998,
      max_frames: 1000,
      memory_rows: 9000,
      rows_per_lane: 5000,
      max_input_code_points: 2000,
      sample_rate: 44100,
      frame_length: 2048,
      lanes: 3,
      backend: 'none',
      memory: { counted_in: 'rows', lane_budget: 9000, lane_budget_free: 9000 },
    });
    assert.deepEqual((await server.app.inject({ method: 'GET', url: '/health' })).json(), { status: 'ready' });
  } finally {
    await server.close();
  }
});

test('/v1/models reports lane memory in device bytes: per row and frame, per lane, what is left', async () => {
  const config = tinyConfig();
  const device = { config, prefillChunk: 16, limitBytes: 3e9, usedBytes: 1e9 };
  const server = await startTestServer({
    settings: { lanes: 2, memoryRows: 1000, referenceCacheBytes: 0 },
    model: { contextRows: 5000, framesPerRow: 100, stepMilliseconds: 5 },
    device,
  });
  const speech = async () => (await server.app.inject({ method: 'GET', url: '/v1/models' })).json().data[0].speech;
  try {
    const idle = await speech();
    const laneBudget = 2 * 29292 + 1000 * 1920;
    assert.equal(idle.memory_rows, 1000);
    assert.equal(idle.rows_per_lane, 1000);
    assert.equal(idle.max_prompt_rows, 998);
    assert.deepEqual(idle.memory, {
      counted_in: 'device_bytes',
      lane_budget: laneBudget,
      lane_budget_free: laneBudget,
      bytes_per_prompt_row: 1920,
      bytes_per_frame: 1920,
      fixed_bytes_per_lane: 29292,
      device_limit_bytes: 3e9,
      device_used_bytes: 1e9,
      device_free_bytes: 2e9,
    });
    // A running request of 9 prompt rows and 500 frames holds its lane's state and 510 rows.
    const reply = server.client.audio.speech.create({
      model: 'm',
      voice: 'default',
      input: 'x',
      max_frames: 500,
    } as never);
    let busy = idle;
    const deadline = Date.now() + 5000;
    while (busy.memory.lane_budget_free === laneBudget) {
      assert.ok(Date.now() < deadline, 'the running request never showed in lane_budget_free');
      await new Promise((resolve) => setTimeout(resolve, 5));
      busy = await speech();
    }
    assert.equal(busy.memory.lane_budget_free, laneBudget - (29292 + 510 * 1920));
    const metrics = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    const gauge = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics)?.[1]);
    assert.equal(gauge('drama3_lane_memory_free'), busy.memory.lane_budget_free);
    assert.equal(gauge('drama3_device_memory_used_bytes'), 1e9);
    assert.equal(gauge('drama3_device_memory_limit_bytes'), 3e9);
    await (await reply).arrayBuffer();
  } finally {
    await server.close();
  }
});

test('/openapi.json describes both speech routes with their request schemas', async () => {
  const server = await startTestServer();
  try {
    const spec = (await server.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    assert.match(spec.openapi, /^3\./);
    const speech = spec.paths['/v1/audio/speech'].post.requestBody.content['application/json'].schema;
    assert.equal(speech.additionalProperties, false);
    assert.ok(speech.properties.max_frames);
    assert.ok(spec.paths['/v1/tts'].post);
  } finally {
    await server.close();
  }
});

test('/metrics counts requests, frames and time to first audio', async () => {
  const server = await startTestServer();
  try {
    await server.app.inject({
      method: 'POST',
      url: '/v1/audio/speech',
      payload: { input: 'count me', response_format: 'pcm', max_frames: 7 },
    });
    const text = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(text, /drama3_requests_total\{route="speech",status="200",code="ok"\} 1/);
    assert.match(text, /drama3_frames_total 7/);
    assert.match(text, /drama3_time_to_first_audio_seconds_count\{route="speech"\} 1/);
    assert.match(text, /drama3_queue_depth 0/);
  } finally {
    await server.close();
  }
});

test('GET / serves the page file when present, else a placeholder that says so', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'drama3-page-'));
  try {
    const page = join(folder, 'index.html');
    await writeFile(page, '<!doctype html><title>playground</title>');
    const withPage = await startTestServer({ app: { pagePath: pathToFileURL(page) } });
    const served = await withPage.app.inject({ method: 'GET', url: '/' });
    assert.equal(served.body, '<!doctype html><title>playground</title>');
    assert.match(String(served.headers['content-type']), /text\/html/);
    await withPage.close();
    const without = await startTestServer({ app: { pagePath: pathToFileURL(join(folder, 'absent.html')) } });
    assert.match((await without.app.inject({ method: 'GET', url: '/' })).body, /not installed yet/);
    await without.close();
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});

test('/health is 503 while a dead engine thread restarts, and 200 once it is back', async () => {
  const server = await startTestServer({ thread: 'worker', model: { exitAtFrame: 2 } });
  try {
    assert.equal((await server.app.inject({ method: 'GET', url: '/health' })).statusCode, 200);
    const speech = await server.app.inject({
      method: 'POST',
      url: '/v1/audio/speech',
      payload: { input: 'crash now', response_format: 'pcm' },
    });
    assert.equal(speech.statusCode, 500);
    assert.equal(speech.json().error.code, 'ENGINE_CRASHED');
    const health = await server.app.inject({ method: 'GET', url: '/health' });
    assert.equal(health.statusCode, 503);
    assert.equal(health.json().error.code, 'ENGINE_CRASHED');
    while (server.engine.failure !== undefined) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal((await server.app.inject({ method: 'GET', url: '/health' })).statusCode, 200);
    const served = await server.app.inject({
      method: 'POST',
      url: '/v1/audio/speech',
      payload: { input: 'short', response_format: 'pcm', max_frames: 2 },
    });
    assert.equal(served.statusCode, 200);
  } finally {
    await server.close();
  }
});
