// The property pass at a fixed seed (`npm run fuzz -- --seconds N --seed S` runs it longer, at any seed).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type FuzzServer, startFuzzServer } from './support/fuzz-server.ts';
import { ROUTE_PROPERTIES, runPropertyPass } from './support/property-pass.ts';
import { TABLE_CASE_COUNT } from './support/table.ts';

const SEED = 20261201;
const RUNS_PER_ROUTE = 50;

let server: FuzzServer;
before(async () => {
  server = await startFuzzServer();
});
after(() => server.close());

test(`http fuzz: property pass over ${ROUTE_PROPERTIES.length} routes at seed ${SEED}`, async (t) => {
  const report = await runPropertyPass(server, { seed: SEED, runs: RUNS_PER_ROUTE });
  const total = Object.values(report.runs).reduce((sum, runs) => sum + runs, 0);
  t.diagnostic(`http fuzz: ${TABLE_CASE_COUNT} table cases, ${total} property runs, seed ${SEED}`);
  t.diagnostic(`http fuzz property runs by route: ${JSON.stringify(report.runs)}`);
  assert.deepEqual(report.failures, []);
  assert.ok(total >= ROUTE_PROPERTIES.length * RUNS_PER_ROUTE);
});
