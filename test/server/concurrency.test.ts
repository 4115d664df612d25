// Contract 3 over HTTP (4 requests at once on 4 lanes = the same 4 served one at a time), the queue bound (503 with
// Retry-After), the finish-reason trailer, and a client that hangs up mid-stream freeing its lane within a round.
import assert from 'node:assert/strict';
import http from 'node:http';
import { test } from 'node:test';
import type { EngineStats } from '../../src/engine/protocol.ts';
import { startTestServer } from './support.ts';

const TEXTS = ['first voice line', 'a second, longer line of text', 'third', 'the fourth request in the batch'];

function speak(url: string, text: string): Promise<Response> {
  return fetch(`${url}/v1/audio/speech`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input: text, response_format: 'pcm', seed: 5 }),
  });
}

test('4 requests at once on 4 lanes give the bytes of the same 4 served one at a time; a 5th gets 503', async () => {
  const server = await startTestServer({
    settings: { lanes: 4 },
    queueLimit: 0,
    model: { stepMilliseconds: 1, framesPerRow: 10 },
  });
  try {
    const alone: Buffer[] = [];
    for (const text of TEXTS) alone.push(Buffer.from(await (await speak(server.url, text)).arrayBuffer()));
    const together = TEXTS.map((text) => speak(server.url, text));
    while (server.engine.requestsInFlight < 4) await new Promise((resolve) => setTimeout(resolve, 1));
    const fifth = await speak(server.url, 'one too many');
    assert.equal(fifth.status, 503);
    assert.equal(fifth.headers.get('retry-after'), '1');
    assert.equal(((await fifth.json()) as { error: { code: string } }).error.code, 'ENGINE_OVERLOADED');
    const replies = await Promise.all(together);
    for (const [index, reply] of replies.entries()) {
      assert.equal(reply.status, 200);
      assert.ok(Buffer.from(await reply.arrayBuffer()).equals(alone[index]!), `request ${index} differs`);
    }
  } finally {
    await server.close();
  }
});

test('the finish reason and frame count arrive as HTTP trailers of a chunked stream', async () => {
  const server = await startTestServer();
  try {
    const { trailers, bytes } = await new Promise<{ trailers: NodeJS.Dict<string>; bytes: number }>(
      (resolve, reject) => {
        const request = http.request(
          `${server.url}/v1/audio/speech`,
          { method: 'POST', headers: { 'content-type': 'application/json' } },
          (response) => {
            let bytes = 0;
            response.on('data', (chunk: Buffer) => {
              bytes += chunk.length;
            });
            response.on('end', () => resolve({ trailers: response.trailers, bytes }));
          },
        );
        request.on('error', reject);
        request.end(
          JSON.stringify({
            input: 'trailers please',
            response_format: 'pcm',
            sample_rate: 44100,
            stream_format: 'audio',
            max_frames: 3,
          }),
        );
      },
    );
    assert.deepEqual(trailers, { 'x-finish-reason': 'length', 'x-output-frames': '3' });
    assert.equal(bytes, 3 * 2048 * 2);
  } finally {
    await server.close();
  }
});

test('a client that disconnects mid-stream frees its lane within one frame round (worker engine)', async () => {
  // Rounds of 250 ms, long beside how late a loaded machine delivers the hang-up to the engine and the engine's
  // round count to this thread (a CI machine running the suite once took over 100 ms), so that the count below is the
  // engine's rounds and not the scheduler's delay.
  const server = await startTestServer({ thread: 'worker', model: { framesPerRow: 1000, stepMilliseconds: 250 } });
  try {
    const history: EngineStats[] = [];
    server.engine.on('stats', (stats) => history.push(stats));
    let roundAtHangUp = -1;
    await new Promise<void>((resolve, reject) => {
      const request = http.request(
        `${server.url}/v1/audio/speech`,
        { method: 'POST', headers: { 'content-type': 'application/json' } },
        (response) => {
          response.once('data', () => {
            roundAtHangUp = server.engine.stats.rounds;
            request.destroy();
            clearTimeout(timer);
            resolve();
          });
        },
      );
      request.on('error', () => {});
      request.end(JSON.stringify({ input: 'a very long request', response_format: 'pcm', stream_format: 'audio' }));
      const timer = setTimeout(() => reject(new Error('no audio arrived')), 5000);
    });
    const idle = () => history.some((stats) => stats.rounds > roundAtHangUp && stats.lanesBusy === 0);
    const deadline = Date.now() + 3000;
    while (server.engine.requestsInFlight > 0 || !idle()) {
      assert.ok(Date.now() < deadline, 'the lane was never released');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.ok(history.some((stats) => stats.lanesBusy === 1));
    const released = history.find((stats) => stats.rounds > roundAtHangUp && stats.lanesBusy === 0)!;
    assert.ok(
      released.rounds - roundAtHangUp <= 2,
      `released ${released.rounds - roundAtHangUp} rounds after the hang-up`,
    );
    assert.equal(server.engine.requestsInFlight, 0);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    assert.match(metrics, /drama3_lanes_busy 0/);
    assert.match(metrics, /drama3_requests_total\{route="speech",status="499",code="CLIENT_CLOSED"\} 1/);
  } finally {
    await server.close();
  }
});

test('a stream that fails after its first chunk ends without the terminating chunk; SSE sends an error event', async () => {
  const server = await startTestServer({ model: { failAtFrame: 6 } });
  try {
    const outcome = await new Promise<{ bytes: number; ended: boolean; aborted: boolean }>((resolve) => {
      const request = http.request(
        `${server.url}/v1/audio/speech`,
        { method: 'POST', headers: { 'content-type': 'application/json' } },
        (response) => {
          let bytes = 0;
          response.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
          });
          response.on('end', () => resolve({ bytes, ended: true, aborted: false }));
          response.on('error', () => resolve({ bytes, ended: false, aborted: true }));
        },
      );
      request.on('error', () => {});
      request.end(
        JSON.stringify({
          input: 'this one breaks',
          response_format: 'pcm',
          sample_rate: 44100,
          stream_format: 'audio',
        }),
      );
    });
    assert.deepEqual(outcome, { bytes: 5 * 2048 * 2, ended: false, aborted: true });
    const sse = await fetch(`${server.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'this one breaks', response_format: 'pcm', stream_format: 'sse' }),
    });
    const events = (await sse.text()).split('\n\n').filter((block) => block.startsWith('data: '));
    const last = JSON.parse(events.at(-1)!.slice('data: '.length));
    assert.equal(last.type, 'speech.audio.error');
    assert.equal(last.error.code, 'NULL_MODEL_FAILURE');
    const healthy = await fetch(`${server.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'ok', response_format: 'pcm', max_frames: 3 }),
    });
    assert.equal(healthy.status, 200, 'the server keeps serving');
  } finally {
    await server.close();
  }
});

test('a client that gives up on a whole-file reply cancels its request too', async () => {
  const server = await startTestServer({ model: { framesPerRow: 1000, stepMilliseconds: 5 } });
  try {
    const request = http.request(`${server.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
    });
    request.on('error', () => {});
    request.end(JSON.stringify({ input: 'a long whole file', response_format: 'pcm' }));
    while (server.engine.stats.lanesBusy === 0) await new Promise((resolve) => setTimeout(resolve, 2));
    request.destroy();
    // Uncancelled, the request would run 64 + 32 × 17 = 608 frames of 5 ms each (3 s).
    const deadline = Date.now() + 1000;
    while (server.engine.requestsInFlight > 0) {
      assert.ok(Date.now() < deadline, 'the request was never cancelled');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const metrics = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(metrics, /drama3_requests_total\{route="speech",status="499",code="CLIENT_CLOSED"\} 1/);
  } finally {
    await server.close();
  }
});
