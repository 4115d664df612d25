// The engine thread dying mid-stream: the chunked reply it was feeding ends without its terminating chunk (so no
// client takes the audio for complete), an SSE reply ends with an error event, and once the thread is started again
// the next request is served.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { send } from '../fuzz/support/http-client.ts';
import { jsonRequest, SPEECH_PATH } from '../fuzz/support/requests.ts';
import { startTestServer, type TestServer } from './support.ts';

/** The worker exits (as a crashed backend would) when a lane reaches this frame. */
const EXIT_AT_FRAME = 12;

let server: TestServer;
before(async () => {
  server = await startTestServer({
    thread: 'worker',
    model: { exitAtFrame: EXIT_AT_FRAME, stepMilliseconds: 5, framesPerRow: 1000 },
  });
});
after(() => server.close());

const LONG = { input: 'a request that outlives its engine thread', response_format: 'pcm', sample_rate: 44100 };

async function engineBack(): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (server.engine.failure !== undefined) {
    assert.ok(Date.now() < deadline, 'the engine thread was not started again');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function nextRequestServed(): Promise<void> {
  await engineBack();
  const reply = await send(server.url, jsonRequest(SPEECH_PATH, { ...LONG, max_frames: 2 }));
  assert.equal(reply.status, 200, reply.body.toString());
  assert.equal(reply.body.length, 2 * 2048 * 2);
  assert.equal(server.engine.requestsInFlight, 0);
}

test('a chunked stream whose engine thread dies ends without its terminating chunk', async () => {
  const reply = await send(server.url, jsonRequest(SPEECH_PATH, { ...LONG, stream_format: 'audio' }));
  assert.equal(reply.status, 200, 'the stream had started');
  assert.equal(reply.complete, false, 'the stream ended with its terminating chunk');
  assert.ok(reply.body.length > 0, 'no audio arrived before the engine died');
  assert.ok(reply.body.length < EXIT_AT_FRAME * 2048 * 2, `${reply.body.length} bytes: more than the engine made`);
  assert.deepEqual(reply.trailers, {}, 'a finish reason was sent for an unfinished stream');
  await nextRequestServed();
});

test('an SSE stream whose engine thread dies ends with an error event, never done', async () => {
  const reply = await send(server.url, jsonRequest(SPEECH_PATH, { ...LONG, stream_format: 'sse' }));
  assert.equal(reply.status, 200);
  const events = reply.body
    .toString()
    .split('\n\n')
    .filter((block) => block.startsWith('data: '))
    .map((block) => JSON.parse(block.slice('data: '.length)) as { type: string; error?: { code: string } });
  assert.ok(
    events.some((event) => event.type === 'speech.audio.delta'),
    'no audio before the engine died',
  );
  assert.ok(!events.some((event) => event.type === 'speech.audio.done'));
  assert.equal(events.at(-1)?.type, 'speech.audio.error');
  assert.equal(events.at(-1)?.error?.code, 'ENGINE_CRASHED');
  await nextRequestServed();
});
