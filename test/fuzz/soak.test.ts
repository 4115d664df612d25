// A short soak in the suite (the 60-second one runs in CI: `npm run soak -- --minutes 1`): random requests from many
// clients with hang-ups at every stage leave no lane busy, nothing in flight, and no leaked descriptors. (Too short
// for a warm-up, it reports RSS without bounding it; the 60-second run bounds it.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runSoak, soakChecks, soakTable } from '../../scripts/soak/run-soak.ts';

test('a short soak: every check of the table holds', async (t) => {
  const report = await runSoak({ seconds: 8, clients: 16, maxRequests: 5000, seed: 11 });
  for (const line of soakTable(report).split('\n')) t.diagnostic(line);
  const failed = soakChecks(report).filter((check) => !check.ok);
  assert.deepEqual(failed, [], soakTable(report));
  const hungUp = [...report.outcomes.keys()].filter((label) => label.startsWith('hung up'));
  assert.ok(hungUp.length >= 3, `hang-ups at too few stages: ${hungUp}`);
});
