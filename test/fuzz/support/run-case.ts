// Runs one table case and the checks every case ends with; returns what went wrong (empty: the case passed).
import type { HttpCase } from './case.ts';
import { afterCaseProblems, type FuzzServer } from './fuzz-server.ts';
import { exchange, send } from './http-client.ts';
import { rawReplyProblems, replyProblems } from './reply-checks.ts';

export async function runCase(server: FuzzServer, testCase: HttpCase): Promise<string[]> {
  const base = testCase.target === 'keyed' ? server.keyed.url : server.open.url;
  const problems: string[] = [];
  try {
    if ('raw' in testCase.request) {
      if (!('error' in testCase.expect)) throw new Error('a raw case must expect an error');
      problems.push(...rawReplyProblems(await exchange(base, testCase.request.raw), testCase.expect.error));
    } else {
      problems.push(...replyProblems(await send(base, testCase.request), testCase.expect));
    }
  } catch (error) {
    problems.push(`no reply: ${error instanceof Error ? error.message : String(error)}`);
  }
  problems.push(...(await afterCaseProblems(server)));
  return problems;
}

/** Table cases with every problem, one block per failing case. */
export function describeFailures(failures: readonly { name: string; problems: readonly string[] }[]): string {
  return failures.map(({ name, problems }) => `${name}:\n  ${problems.join('\n  ')}`).join('\n');
}
