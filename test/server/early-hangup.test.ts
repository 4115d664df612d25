// A client that hangs up before its handler reaches the engine (here: while its voice is being resolved) is never
// generated for: nothing is submitted, and it is counted as CLIENT_CLOSED, not 200.
import assert from 'node:assert/strict';
import http from 'node:http';
import { test } from 'node:test';
import { startTestServer } from './support.ts';

test('a hang-up before submission submits nothing and is counted as client-closed', async () => {
  let hungUp: () => void = () => {};
  const afterHangUp = new Promise<void>((resolve) => {
    hungUp = resolve;
  });
  let resolving: () => void = () => {};
  const resolverCalled = new Promise<void>((resolve) => {
    resolving = resolve;
  });
  const server = await startTestServer({
    model: { framesPerRow: 1000, stepMilliseconds: 2 },
    app: {
      // The handler is held here until the client has gone, then carries on as if nothing happened.
      resolveVoice: async () => {
        resolving();
        await afterHangUp;
        await new Promise((resolve) => setTimeout(resolve, 50));
        return [];
      },
    },
  });
  try {
    const submitted: number[] = [];
    const submit = server.engine.submit.bind(server.engine);
    server.engine.submit = (job, listener) => {
      submitted.push(1);
      return submit(job, listener);
    };
    const request = http.request(`${server.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
    });
    request.on('error', () => {});
    request.end(JSON.stringify({ input: 'a long request nobody waits for', response_format: 'pcm' }));
    await resolverCalled;
    request.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    hungUp();
    const deadline = Date.now() + 3000;
    let metrics = '';
    while (!/code="CLIENT_CLOSED"/.test(metrics)) {
      assert.ok(Date.now() < deadline, `never counted as client-closed:\n${metrics}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
      metrics = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.deepEqual(submitted, [], 'the request reached the engine');
    assert.equal(server.engine.requestsInFlight, 0);
    metrics = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(metrics, /drama3_requests_total\{route="speech",status="499",code="CLIENT_CLOSED"\} 1/);
    assert.doesNotMatch(metrics, /route="speech",status="200"/);
  } finally {
    await server.close();
  }
});
