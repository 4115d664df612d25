// A request whose lane state does not fit in memory, over HTTP: 503 with the named reason and the bytes (no
// Retry-After: waiting cannot make it fit), and the next request is served normally. The null engine under a device
// ledger of the tiny geometry, each lane holding 70 rows.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { deviceBudget } from '../../src/engine/lane-budget.ts';
import { laneBytes, laneStateBytesFor } from '../../src/engine/lane-bytes.ts';
import type { NullDeviceOptions } from '../../src/engine/load-runtime.ts';
import { DramaError } from '../../src/errors.ts';
import { errorHeaders, statusOf } from '../../src/server/errors.ts';
import { tinyConfig } from '../model/tiny-config.ts';
import { startTestServer, type TestServer } from './support.ts';

const LANES = 2;
const ROWS = 70;

/** A device whose cap leaves each of the lanes + 1 slots exactly ROWS rows beside what the budget sets aside. */
function device(): NullDeviceOptions {
  const config = tinyConfig();
  const memory = { config, prefillChunk: 16, codecStreams: 0 };
  const probe = { lanes: LANES, contextRows: 4096, memoryRows: undefined, referenceCacheBytes: 0 };
  const used = 5_000_000;
  const reserved = deviceBudget({
    ...probe,
    memory: { ...memory, device: () => ({ limitBytes: 1e12, usedBytes: used }) },
  }).device!.reservedBytes;
  const limitBytes = used + reserved + (LANES + 1) * laneStateBytesFor(laneBytes(config), ROWS);
  return { ...memory, limitBytes, usedBytes: used };
}

let server: TestServer;
before(async () => {
  server = await startTestServer({
    model: { framesPerRow: 100 },
    device: device(),
    settings: { lanes: LANES, referenceCacheBytes: 0 },
  });
});
after(() => server.close());

function speech(body: Record<string, unknown>): Promise<Response> {
  return fetch(`${server.url}/v1/audio/speech`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input: 'x', response_format: 'pcm', seed: 1, ...body }),
  });
}

test('a request over a lane gets 503 naming the memory and its bytes; the next request is served', async () => {
  assert.equal(server.engine.info.rowsPerLane, ROWS);
  const refused = await speech({ max_frames: 61 });
  assert.equal(refused.status, 503);
  assert.equal(refused.headers.get('retry-after'), null, 'waiting cannot make it fit');
  const { error } = (await refused.json()) as { error: { code: string; message: string; param: string } };
  assert.equal(error.code, 'MEMORY_BUDGET_EXCEEDED');
  assert.equal(error.param, 'max_frames');
  assert.match(error.message, /exceed a lane's memory of 70 rows .*device bytes.*at most 60 frames fit/);
  const served = await speech({ max_frames: 4 });
  assert.equal(served.status, 200);
  assert.ok((await served.arrayBuffer()).byteLength > 0);
});

test('an allocation the device or the cap refuses answers 503 with Retry-After: memory may free', () => {
  for (const code of ['ALLOCATION_LIMIT_EXCEEDED', 'CUDA_ERROR_OUT_OF_MEMORY']) {
    const status = statusOf(new DramaError(code, 'refused', { kind: 'device' }));
    assert.equal(status, 503, code);
    assert.ok(errorHeaders(status, code)['Retry-After'] !== undefined, code);
  }
});
