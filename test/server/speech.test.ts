// /v1/audio/speech driven by the real `openai` client: whole files, chunked streams read chunk by chunk, and SSE.
// Durations are checked against frames × 2048 / 44100 s (the null engine's frame count comes back in the headers).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { expectedSamples, joinBytes, readChunks, startTestServer, type TestServer } from './support.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

// 40 code points + 8 header rows → 24 frames on the null model.
const INPUT = 'The quick brown fox jumps over the lazy.';
const FRAMES = 24;

function wavDataBytes(bytes: Buffer): { rate: number; data: Buffer } {
  assert.equal(bytes.toString('latin1', 0, 4), 'RIFF');
  assert.equal(bytes.toString('latin1', 8, 12), 'WAVE');
  return { rate: bytes.readUInt32LE(24), data: bytes.subarray(44) };
}

test('wav: a whole file at 44.1 kHz with the finish reason and usage headers', async () => {
  const response = await server.client.audio.speech
    .create({ model: 'drama3', voice: 'alloy', input: INPUT, response_format: 'wav', seed: 3 } as never)
    .asResponse();
  assert.equal(response.headers.get('content-type'), 'audio/wav');
  assert.equal(response.headers.get('x-finish-reason'), 'stop');
  assert.equal(response.headers.get('x-output-frames'), String(FRAMES));
  assert.equal(response.headers.get('x-input-tokens'), '40');
  const bytes = Buffer.from(await response.arrayBuffer());
  assert.equal(bytes.readUInt32LE(4), bytes.length - 8, 'RIFF size');
  assert.equal(bytes.readUInt32LE(40), bytes.length - 44, 'data size');
  const { rate, data } = wavDataBytes(bytes);
  assert.equal(rate, 44100);
  assert.equal(data.length / 2, FRAMES * 2048);
});

test('pcm: 24 kHz by default, 44.1 kHz with sample_rate, streamed chunk by chunk', async () => {
  const response = await server.client.audio.speech
    .create({ model: 'drama3', voice: 'alloy', input: INPUT, response_format: 'pcm', stream_format: 'audio' } as never)
    .asResponse();
  assert.equal(response.headers.get('x-sample-rate'), '24000');
  const chunks = await readChunks(response.body!);
  assert.ok(chunks.length >= 2, `got ${chunks.length} chunks`);
  assert.equal(joinBytes(chunks).length / 2, expectedSamples(FRAMES, 24000));
  const native = await server.client.audio.speech
    .create({ model: 'drama3', voice: 'alloy', input: INPUT, response_format: 'pcm', sample_rate: 44100 } as never)
    .asResponse();
  assert.equal(Buffer.from(await native.arrayBuffer()).length / 2, FRAMES * 2048);
});

test('the same request with the same seed is byte-identical, streamed or whole', async () => {
  const body = { model: 'drama3', voice: 'alloy', input: INPUT, response_format: 'pcm', seed: 11 };
  const whole = Buffer.from(await (await server.client.audio.speech.create(body as never)).arrayBuffer());
  const streamed = joinBytes(
    await readChunks((await server.client.audio.speech.create({ ...body, stream_format: 'audio' } as never)).body!),
  );
  assert.ok(whole.equals(streamed));
  const other = Buffer.from(
    await (await server.client.audio.speech.create({ ...body, seed: 12 } as never)).arrayBuffer(),
  );
  assert.ok(!whole.equals(other));
});

test('sse: delta events carry base64 audio, then done with usage and finish reason', async () => {
  const response = await server.client.audio.speech.create({
    model: 'drama3',
    voice: 'alloy',
    input: INPUT,
    response_format: 'pcm',
    sample_rate: 44100,
    stream_format: 'sse',
  } as never);
  assert.equal(response.headers.get('content-type'), 'text/event-stream');
  const text = joinBytes(await readChunks(response.body!)).toString('utf8');
  const events = text
    .split('\n\n')
    .filter((block) => block.startsWith('data: '))
    .map((block) => JSON.parse(block.slice('data: '.length)) as Record<string, unknown>);
  const deltas = events.filter((event) => event.type === 'speech.audio.delta');
  assert.ok(deltas.length >= 2);
  const audio = Buffer.concat(deltas.map((event) => Buffer.from(String(event.audio), 'base64')));
  assert.equal(audio.length / 2, FRAMES * 2048);
  assert.deepEqual(events.at(-1), {
    type: 'speech.audio.done',
    usage: { input_tokens: 40, output_tokens: FRAMES, total_tokens: 40 + FRAMES },
    finish_reason: 'stop',
  });
});

test('a clipped reply says length in the trailer of a chunked stream', async () => {
  const response = await fetch(`${server.url}/v1/audio/speech`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      input: INPUT,
      response_format: 'pcm',
      sample_rate: 44100,
      stream_format: 'audio',
      max_frames: 5,
    }),
  });
  const bytes = joinBytes(await readChunks(response.body!));
  assert.equal(bytes.length / 2, 5 * 2048);
  assert.equal(response.headers.get('trailer'), 'X-Finish-Reason, X-Output-Frames');
});

test('speed stretches time with the pitch kept: 1.5 gives frames × 2048 / 1.5 samples', async () => {
  const body = { model: 'drama3', voice: 'alloy', input: INPUT, response_format: 'pcm', sample_rate: 44100, seed: 4 };
  const normal = Buffer.from(await (await server.client.audio.speech.create(body as never)).arrayBuffer());
  const fast = await server.client.audio.speech.create({ ...body, speed: 1.5 } as never);
  const bytes = Buffer.from(await fast.arrayBuffer());
  assert.equal(normal.length / 2, FRAMES * 2048);
  assert.equal(bytes.length / 2, Math.round((FRAMES * 2048) / 1.5));
});
