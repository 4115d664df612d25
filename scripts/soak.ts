// `npm run soak -- --minutes N [--clients C] [--seed S] [--max-requests R]`: the soak on the null engine (chosen over
// `tiny` because it serves many more requests per second on a CPU, so hang-ups, admission and teardown are hit far
// more often; its worker and decode threads are the real ones). Prints one table; exits 1 when a check fails. A failed
// request is printed with its trace from both ends (client events and the server's, by X-Request-Id).
import { parseArgs } from 'node:util';
import { runSoak, soakChecks, soakTable } from './soak/run-soak.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '1' },
    clients: { type: 'string', default: '32' },
    seed: { type: 'string' },
    'max-requests': { type: 'string', default: '1000000' },
  },
});
const seconds = Number(values.minutes) * 60;
const clients = Number(values.clients);
const maxRequests = Number(values['max-requests']);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
if (!(seconds > 0) || !(clients >= 1) || !(maxRequests >= 1) || !Number.isInteger(seed)) {
  console.error('usage: npm run soak -- --minutes N [--clients C] [--seed S] [--max-requests R]');
  process.exit(2);
}

const report = await runSoak({ seconds, clients, maxRequests, seed });
console.log(soakTable(report));
process.exitCode = soakChecks(report).every((check) => check.ok) ? 0 : 1;
