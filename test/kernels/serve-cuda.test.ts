// The server end to end on the CUDA backend: the `small` synthetic checkpoint (the real head dimensions) written in
// the real format and loaded with `backend: 'cuda'` and `codecBackend: 'cuda'` (the model and the codec on CUDA, the
// text front end on the cpu), with the engine inline and on its own threads (the engine thread and the decode thread,
// as `serve` runs it), then requests over the OpenAI speech route: a reply has frames × 2048 samples and repeats with
// its seed, a WAV reply carries the same samples, 4 requests served together on 4 lanes give the bytes of the same 4
// served alone (contract 3 over HTTP on CUDA), and both threadings give the same bytes. Skips, saying why, without a
// CUDA device or without built kernels.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { floatToInt16 } from '../../src/audio/pcm.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import { Engine } from '../../src/engine/engine.ts';
import { DEFAULT_ENGINE_SETTINGS } from '../../src/engine/engine-core.ts';
import { buildApp } from '../../src/server/app.ts';
import { audioToolkit } from '../../src/server/audio-toolkit.ts';
import { speechCheckpointDir } from './support/speech-model-checkpoint.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `needs a CUDA device: ${availability.reason}`;
const FRAMES = 8;
const TEXTS = [
  'Hello there.',
  'A second, somewhat longer sentence to speak.',
  'Three.',
  'And the fourth one, with 42 apples.',
];

/** The first reply of each threading, which must be the same bytes. */
const firstReplies = new Map<string, Buffer>();

for (const thread of ['inline', 'worker'] as const) {
  describe(`engine ${thread}`, () => {
    let app: FastifyInstance | undefined;
    let engine: Engine | undefined;
    before(async () => {
      if (skip) return;
      const dir = await speechCheckpointDir('small');
      engine = await Engine.start({
        runtime: { kind: 'checkpoint', dir, prefillChunk: 256, backend: 'cuda', codecBackend: 'cuda' },
        settings: { ...DEFAULT_ENGINE_SETTINGS, lanes: 4 },
        queueLimit: 8,
        thread,
      });
      app = await buildApp({ engine, audio: audioToolkit });
    });
    after(async () => {
      await app?.close();
      await engine?.close();
    });
    serverTests(
      thread,
      () => app!,
      () => engine!,
    );
  });
}

test('the engine inline and on its threads give the same bytes', { skip }, () => {
  assert.equal(firstReplies.size, 2);
  assert.ok(firstReplies.get('inline')!.equals(firstReplies.get('worker')!), 'the threadings gave other bytes');
});

function speakTo(app: FastifyInstance, input: string, seed: number, format: 'pcm' | 'wav' = 'pcm') {
  return app!.inject({
    method: 'POST',
    url: '/v1/audio/speech',
    payload: { input, response_format: format, sample_rate: 44100, seed, max_frames: FRAMES },
  });
}

function serverTests(thread: string, appOf: () => FastifyInstance, engineOf: () => Engine): void {
  const speak = (input: string, seed: number, format: 'pcm' | 'wav' = 'pcm') => speakTo(appOf(), input, seed, format);
  test(`small on cuda over HTTP (${thread}): frames × 2048 samples, the same bytes for the same seed, WAV of the same samples`, {
    skip,
  }, async () => {
    const app = appOf();
    const engine = engineOf();
    const model = (await app!.inject({ method: 'GET', url: '/v1/models' })).json().data[0];
    assert.equal(model.speech.backend, 'cuda');
    assert.ok(
      engine!.info.notices.some((notice) => notice.startsWith('codec: cuda')),
      engine!.info.notices.join('; '),
    );
    const started = performance.now();
    const first = await speak(TEXTS[0]!, 3);
    console.log(`${thread}: first reply (${FRAMES} frames) in ${(performance.now() - started).toFixed(0)} ms`);
    firstReplies.set(thread, first.rawPayload);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.headers['x-output-frames'], String(FRAMES));
    assert.equal(first.rawPayload.length, FRAMES * 2048 * 2);
    const again = await speak(TEXTS[0]!, 3);
    assert.ok(again.rawPayload.equals(first.rawPayload), 'the same seed gave other bytes');
    const reseeded = await speak(TEXTS[0]!, 4);
    assert.ok(!reseeded.rawPayload.equals(first.rawPayload), 'another seed gave the same bytes');
    const wav = await speak(TEXTS[0]!, 3, 'wav');
    assert.equal(wav.statusCode, 200);
    const bits = wav.rawPayload.readUInt16LE(34);
    const data = wav.rawPayload.subarray(44);
    if (bits === 16) assert.ok(data.equals(first.rawPayload), 'the WAV samples differ from the PCM reply');
    else {
      const samples = new Int16Array(data.length / 4);
      for (let i = 0; i < samples.length; i++) samples[i] = floatToInt16(data.readFloatLE(4 * i));
      assert.ok(Buffer.from(samples.buffer).equals(first.rawPayload), 'the WAV samples differ from the PCM reply');
    }
  });

  test(`small on cuda over HTTP (${thread}): 4 requests together on 4 lanes equal the same 4 served alone`, {
    skip,
  }, async () => {
    const alone: Buffer[] = [];
    for (const [index, text] of TEXTS.entries()) alone.push((await speak(text, index)).rawPayload);
    const together = await Promise.all(TEXTS.map((text, index) => speak(text, index)));
    for (const [index, reply] of together.entries()) {
      assert.equal(reply.statusCode, 200, reply.body);
      assert.ok(reply.rawPayload.equals(alone[index]!), `request ${index} differs when batched`);
    }
  });
}
