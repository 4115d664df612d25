// A reply that ends without its engine's `finished` frees its encoder: a client that hangs up, a synthesis that
// fails and a request refused at admission each leave no AAC job open in the encoder worker.
import assert from 'node:assert/strict';
import http from 'node:http';
import { test } from 'node:test';
import { openAacJobs } from '../../src/audio/encoders/aac.ts';
import { startTestServer, type TestServer } from './support.ts';

async function metrics(server: TestServer): Promise<string> {
  return (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
}

/** Polls `condition` until it holds; fails after `seconds` (a hang, not a speed check). */
async function waitFor(condition: () => Promise<boolean>, what: string, seconds = 5): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (!(await condition())) {
    assert.ok(Date.now() < deadline, `never happened: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Sends a speech request whose reply nobody reads; destroy the returned request to hang up. */
function startRequest(server: TestServer, body: object): http.ClientRequest {
  const request = http.request(`${server.url}/v1/audio/speech`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
  });
  request.on('error', () => {});
  request.end(JSON.stringify(body));
  return request;
}

test('a client that hangs up mid-stream on an aac reply leaves no AAC job open', async () => {
  const server = await startTestServer({ model: { framesPerRow: 1000, stepMilliseconds: 2 } });
  try {
    const request = startRequest(server, { input: 'a long aac reply', response_format: 'aac' });
    const framesSent = async () => Number(/drama3_frames_total (\d+)/.exec(await metrics(server))?.[1] ?? 0) > 0;
    await waitFor(framesSent, 'audio reached the encoder');
    assert.equal(await openAacJobs(), 1, 'the running reply holds one AAC job');
    request.destroy();
    await waitFor(
      async () => /status="499",code="CLIENT_CLOSED"\} 1/.test(await metrics(server)),
      'the request was cancelled',
    );
    assert.equal(await openAacJobs(), 0);
  } finally {
    await server.close();
  }
});

test('an aac reply whose synthesis fails leaves no AAC job open', async () => {
  const server = await startTestServer({ model: { failAtFrame: 6 } });
  try {
    const reply = await fetch(`${server.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'this one breaks', response_format: 'aac' }),
    });
    assert.equal(((await reply.json()) as { error: { code: string } }).error.code, 'NULL_MODEL_FAILURE');
    assert.equal(await openAacJobs(), 0);
  } finally {
    await server.close();
  }
});

test('an aac request refused at admission leaves no AAC job open', async () => {
  const server = await startTestServer({
    settings: { lanes: 1 },
    queueLimit: 0,
    model: { framesPerRow: 1000, stepMilliseconds: 2 },
  });
  try {
    const busy = startRequest(server, { input: 'a long pcm reply keeps the only lane', response_format: 'pcm' });
    await waitFor(async () => server.engine.requestsInFlight === 1, 'the lane was taken');
    const refused = await fetch(`${server.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'no room', response_format: 'aac' }),
    });
    assert.equal(refused.status, 503);
    assert.equal(await openAacJobs(), 0);
    busy.destroy();
    await waitFor(async () => server.engine.requestsInFlight === 0, 'the busy request was cancelled');
  } finally {
    await server.close();
  }
});
