// `npm run fuzz -- --seconds N --seed S`: the HTTP fuzz table once, then the property pass for N seconds (split over
// the routes) at seed S (default: a fresh one, printed so that a failure can be replayed). Exits 1 on any failure.
import { parseArgs } from 'node:util';
import { type FuzzServer, startFuzzServer } from '../test/fuzz/support/fuzz-server.ts';
import { runPropertyPass } from '../test/fuzz/support/property-pass.ts';
import { describeFailures, runCase } from '../test/fuzz/support/run-case.ts';
import { TABLE_CASE_COUNT, TABLES } from '../test/fuzz/support/table.ts';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '60' }, seed: { type: 'string' } },
});
const seconds = Number(values.seconds);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
if (!(seconds > 0) || !Number.isInteger(seed)) {
  console.error('usage: npm run fuzz -- --seconds N --seed S (N > 0, S an integer)');
  process.exit(2);
}

async function runTable(server: FuzzServer): Promise<number> {
  const failures: { name: string; problems: string[] }[] = [];
  for (const cases of Object.values(TABLES)) {
    for (const testCase of cases) {
      const problems = await runCase(server, testCase);
      if (problems.length > 0) failures.push({ name: testCase.name, problems });
    }
  }
  if (failures.length > 0) console.log(describeFailures(failures));
  return failures.length;
}

const server = await startFuzzServer();
try {
  console.log(`http fuzz: ${TABLE_CASE_COUNT} table cases, then ${seconds} s of property runs at seed ${seed}`);
  const tableFailures = await runTable(server);
  const report = await runPropertyPass(server, { seed, seconds });
  const total = Object.values(report.runs).reduce((sum, runs) => sum + runs, 0);
  for (const failure of report.failures) console.log(failure);
  console.log(
    `http fuzz: ${TABLE_CASE_COUNT} table cases (${tableFailures} failed), ${total} property runs, seed ${seed}`,
  );
  console.log(`property runs by route: ${JSON.stringify(report.runs)}`);
  process.exitCode = tableFailures > 0 || report.failures.length > 0 ? 1 : 0;
} finally {
  await server.close();
}
