// The soak's stall clock: a request with no progress on a responsive event loop is called stalled; progress resets
// its clock; time the loop could not run (a starved process) is not counted against it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TraceBook } from '../../scripts/soak/trace-book.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('no progress on a responsive loop: stalled once; steady progress: never', async () => {
  const book = new TraceBook(400);
  const stalls: string[] = [];
  book.start();
  book.begin('quiet', () => stalls.push('quiet'));
  book.begin('busy', () => stalls.push('busy'));
  for (let step = 0; step < 20; step++) {
    await sleep(50);
    book.record('busy', `chunk ${step}`);
  }
  book.stop();
  assert.deepEqual(stalls, ['quiet']);
  assert.equal(book.events('busy').length, 21);
});

test('a loop blocked for longer than the stall time does not call a request stalled', async () => {
  const book = new TraceBook(1500);
  const stalls: string[] = [];
  book.start();
  book.begin('waiting', () => stalls.push('waiting'));
  await sleep(100);
  const blockedUntil = performance.now() + 3000;
  while (performance.now() < blockedUntil);
  await sleep(100);
  book.stop();
  assert.deepEqual(stalls, []);
  assert.ok(book.longestLoopDelayMs >= 2900, `the block was measured: ${book.longestLoopDelayMs} ms`);
});
