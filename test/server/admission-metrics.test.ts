// /metrics explains a 503: a request whose frames are all generated but still waiting for decode holds admission,
// and it shows as in flight, lane busy and decode backlog; the 503 it causes is counted with its code, as are
// validation errors.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestServer } from './support.ts';

const gauge = (metrics: string, name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics)?.[1]);

test('frames waiting for decode hold admission and show in /metrics; the 503 they cause is counted', async () => {
  // Generation is instant; decoding takes 40 ms a frame in the decode thread, so 30 frames wait there for a second.
  const server = await startTestServer({
    thread: 'worker',
    settings: { lanes: 1 },
    queueLimit: 0,
    model: { framesPerRow: 1000 },
    codec: { frameMilliseconds: 40 },
  });
  try {
    const first = fetch(`${server.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'decoded slowly', response_format: 'pcm', max_frames: 30 }),
    });
    const deadline = Date.now() + 5000;
    let metrics = '';
    while (!(gauge(metrics, 'drama3_decode_backlog') === 1)) {
      assert.ok(Date.now() < deadline, `no decode backlog seen:\n${metrics}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
      metrics = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    }
    assert.equal(server.engine.stats.lanesBusy, 0, 'the scheduler has released the lane');
    assert.equal(gauge(metrics, 'drama3_requests_in_flight'), 1);
    assert.equal(gauge(metrics, 'drama3_lanes_busy'), 1);
    assert.equal(gauge(metrics, 'drama3_queue_depth'), 0);
    const refused = await server.app.inject({ method: 'POST', url: '/v1/audio/speech', payload: { input: 'no room' } });
    assert.equal(refused.statusCode, 503);
    const invalid = await server.app.inject({ method: 'POST', url: '/v1/audio/speech', payload: { input: 7 } });
    assert.equal(invalid.statusCode, 400);
    assert.equal((await first).status, 200);
    metrics = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(metrics, /drama3_requests_total\{route="speech",status="503",code="ENGINE_OVERLOADED"\} 1/);
    assert.match(metrics, /drama3_requests_total\{route="speech",status="400",code="INVALID_FIELD"\} 1/);
    assert.match(metrics, /drama3_requests_total\{route="speech",status="200",code="ok"\} 1/);
    assert.equal(gauge(metrics, 'drama3_requests_in_flight'), 0);
    assert.equal(gauge(metrics, 'drama3_decode_backlog'), 0);
  } finally {
    await server.close();
  }
});
