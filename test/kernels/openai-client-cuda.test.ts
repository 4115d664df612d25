// The official `openai` npm client against the server on CUDA: the `small` synthetic checkpoint (the real head dims)
// loaded with the model and the codec on CUDA and the engine on its own threads, as `serve` runs it, and the voice
// catalog encoding uploads on CUDA. WAV, MP3, streamed PCM and SSE replies; a voice uploaded, then spoken with (the
// same bytes twice, other bytes than the default voice). Skips, saying why, without a CUDA device.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import OpenAI from 'openai';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import { openVoices } from '../../src/cli/voices.ts';
import { Engine } from '../../src/engine/engine.ts';
import { DEFAULT_ENGINE_SETTINGS } from '../../src/engine/engine-core.ts';
import type { RuntimeSpec } from '../../src/engine/load-runtime.ts';
import { buildApp } from '../../src/server/app.ts';
import { audioToolkit } from '../../src/server/audio-toolkit.ts';
import { joinBytes, readChunks } from '../server/support.ts';
import { toneWav } from '../voices/wav-fixture.ts';
import { speechCheckpointDir } from './support/speech-model-checkpoint.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `needs a CUDA device: ${availability.reason}`;
const FRAMES = 8;
const INPUT = 'Hello from the client.';

let app: FastifyInstance | undefined;
let engine: Engine | undefined;
let client: OpenAI;
let url: string;
let voicesDir: string | undefined;

before(async () => {
  if (skip) return;
  const dir = await speechCheckpointDir('small');
  const runtime: RuntimeSpec = { kind: 'checkpoint', dir, prefillChunk: 256, backend: 'cuda', codecBackend: 'cuda' };
  engine = await Engine.start({
    runtime,
    settings: { ...DEFAULT_ENGINE_SETTINGS, lanes: 4 },
    queueLimit: 8,
    thread: 'worker',
  });
  voicesDir = await mkdtemp(join(tmpdir(), 'drama3-voices-cuda-'));
  app = await buildApp({ engine, audio: audioToolkit, ...(await openVoices(voicesDir, runtime)) });
  url = await app.listen({ host: '127.0.0.1', port: 0 });
  client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'test-key', maxRetries: 0 });
});
after(async () => {
  await app?.close();
  await engine?.close();
  if (voicesDir !== undefined) await rm(voicesDir, { recursive: true, force: true });
});

function speech(extra: Record<string, unknown>) {
  const body = { model: 'drama3', voice: 'alloy', input: INPUT, seed: 5, max_frames: FRAMES, ...extra };
  return client.audio.speech.create(body as never);
}

test('wav and mp3 from the openai client, the model and codec on CUDA', { skip }, async () => {
  const wav = Buffer.from(await (await speech({ response_format: 'wav' })).arrayBuffer());
  assert.equal(wav.toString('latin1', 0, 4), 'RIFF');
  assert.equal(wav.readUInt32LE(24), 44100);
  const bytesPerSample = wav.readUInt16LE(34) / 8;
  assert.equal(wav.subarray(44).length / bytesPerSample, FRAMES * 2048);
  const mp3 = Buffer.from(await (await speech({ response_format: 'mp3' })).arrayBuffer());
  const frameSync = mp3[0] === 0xff && (mp3[1]! & 0xe0) === 0xe0;
  assert.ok(frameSync || mp3.toString('latin1', 0, 3) === 'ID3', 'an MP3 stream');
});

test('streamed pcm arrives in chunks that join to the whole reply; sse carries the same audio', { skip }, async () => {
  const whole = Buffer.from(await (await speech({ response_format: 'pcm', sample_rate: 44100 })).arrayBuffer());
  assert.equal(whole.length, FRAMES * 2048 * 2);
  const chunks = await readChunks(
    (await speech({ response_format: 'pcm', sample_rate: 44100, stream_format: 'audio' })).body!,
  );
  assert.ok(chunks.length >= 2, `${chunks.length} chunks`);
  assert.ok(joinBytes(chunks).equals(whole), 'the streamed bytes differ from the whole reply');
  const sse = await speech({ response_format: 'pcm', sample_rate: 44100, stream_format: 'sse' });
  assert.equal(sse.headers.get('content-type'), 'text/event-stream');
  const events = joinBytes(await readChunks(sse.body!))
    .toString('utf8')
    .split('\n\n')
    .filter((block) => block.startsWith('data: '))
    .map((block) => JSON.parse(block.slice('data: '.length)) as Record<string, unknown>);
  const audio = Buffer.concat(
    events
      .filter((event) => event.type === 'speech.audio.delta')
      .map((event) => Buffer.from(String(event.audio), 'base64')),
  );
  assert.ok(audio.equals(whole), 'the SSE audio differs from the whole reply');
  assert.equal(events.at(-1)?.type, 'speech.audio.done');
});

test('a voice uploaded (encoded on CUDA) speaks the same bytes twice, and other bytes than the default', {
  skip,
}, async () => {
  const form = new FormData();
  form.append('name', 'gpu-voice');
  form.append('text', 'A short reference, spoken once.');
  form.append('audio', new Blob([toneWav(2, 24000, 210)], { type: 'audio/wav' }), 'voice.wav');
  const created = await fetch(`${url}/v1/audio/voices`, { method: 'POST', body: form });
  assert.equal(created.status, 201, await created.clone().text());
  assert.ok(((await created.json()) as { frames: number }).frames > 0);
  const withVoice = async () =>
    Buffer.from(await (await speech({ voice: 'gpu-voice', response_format: 'pcm', sample_rate: 44100 })).arrayBuffer());
  const first = await withVoice();
  const second = await withVoice();
  assert.ok(first.equals(second), 'the cached voice gave other bytes the second time');
  const plain = Buffer.from(await (await speech({ response_format: 'pcm', sample_rate: 44100 })).arrayBuffer());
  assert.ok(!first.equals(plain), 'the voice did not change the audio');
});
