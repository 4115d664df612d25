// The HTTP fuzz table: every case gets valid audio (or its route's JSON) or OpenAI's error envelope with its stable
// code and status, never a 5xx; after each, a good request succeeds and the catalog folder holds only its voices.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type FuzzServer, startFuzzServer } from './support/fuzz-server.ts';
import { describeFailures, runCase } from './support/run-case.ts';
import { TABLE_CASE_COUNT, TABLES } from './support/table.ts';

let server: FuzzServer;
before(async () => {
  server = await startFuzzServer();
});
after(() => server.close());

for (const [table, cases] of Object.entries(TABLES)) {
  test(`http fuzz table: ${cases.length} ${table} cases`, async (t) => {
    const names = new Set(cases.map((testCase) => testCase.name));
    assert.equal(names.size, cases.length, 'case names are unique');
    const failures: { name: string; problems: string[] }[] = [];
    for (const testCase of cases) {
      const problems = await runCase(server, testCase);
      if (problems.length > 0) failures.push({ name: testCase.name, problems });
    }
    t.diagnostic(`http fuzz: ${cases.length} ${table} table cases, ${cases.length - failures.length} passed`);
    assert.equal(
      failures.length,
      0,
      `${failures.length} of ${cases.length} cases failed:\n${describeFailures(failures)}`,
    );
  });
}

test('http fuzz table: at least 100 cases in all', (t) => {
  t.diagnostic(`http fuzz: ${TABLE_CASE_COUNT} table cases`);
  assert.ok(TABLE_CASE_COUNT >= 100, `${TABLE_CASE_COUNT} cases`);
});
