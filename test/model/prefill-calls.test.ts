// How a joint prefill is cut into calls (src/model/prefill-calls.ts): never more rows in a call than the chunk, a lane
// once per call, every part's rows in order and whole, the last prompt row never run, and as few calls as the rows
// need.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { prefillCalls } from '../../src/model/prefill-calls.ts';
import type { PromptRows } from '../../src/model/types.ts';

function rowsOf(length: number): PromptRows {
  return { tokens: new Int32Array(length), codes: new Int32Array(length * 10), referenceRows: 0 };
}

const parts = fc.array(
  fc.record({ length: fc.integer({ min: 1, max: 90 }), a: fc.nat(), b: fc.nat() }).map(({ length, a, b }) => {
    const [from, to] = [a % (length + 1), b % (length + 1)].sort((x, y) => x - y) as [number, number];
    return { rows: rowsOf(length), from, to };
  }),
  { maxLength: 9 },
);

test('calls hold at most the chunk, each lane once, every part whole and in order, in as few calls as its rows need', () => {
  fc.assert(
    fc.property(parts, fc.integer({ min: 1, max: 40 }), (drawn, chunk) => {
      const lanes = drawn.map((part, lane) => ({ ...part, lane }));
      const calls = prefillCalls(lanes, chunk);
      for (const call of calls) {
        assert.ok(call.reduce((sum, segment) => sum + segment.count, 0) <= chunk);
        assert.equal(new Set(call.map((segment) => segment.lane)).size, call.length);
      }
      let run = 0;
      for (const part of lanes) {
        const segments = calls.flat().filter((segment) => segment.lane === part.lane);
        const runEnd = Math.max(part.from, Math.min(part.to, part.rows.tokens.length - 1));
        if (part.from === part.to) {
          assert.equal(segments.length, 0);
          continue;
        }
        let at = part.from;
        for (const segment of segments) {
          assert.equal(segment.from, at);
          assert.equal(segment.count, Math.min(segment.to, runEnd) - segment.from);
          at = segment.to;
        }
        assert.equal(at, part.to);
        run += runEnd - part.from;
      }
      if (run > 0) assert.equal(calls.length, Math.ceil(run / chunk));
    }),
    { seed: 20261202, numRuns: 500 },
  );
});

test('a part that only reaches the last row runs no row but is still a segment (the pending row is written)', () => {
  const calls = prefillCalls([{ lane: 'a', rows: rowsOf(5), from: 4, to: 5 }], 8);
  assert.deepEqual(
    calls.map((call) => call.map(({ from, to, count }) => [from, to, count])),
    [[[4, 5, 0]]],
  );
});

test('a lane that does not fit what is left of a call goes on in the next', () => {
  const calls = prefillCalls(
    [
      { lane: 'a', rows: rowsOf(7), from: 0, to: 7 },
      { lane: 'b', rows: rowsOf(20), from: 0, to: 12 },
    ],
    8,
  );
  assert.deepEqual(
    calls.map((call) => call.map(({ lane, from, to, count }) => [lane, from, to, count])),
    [
      [
        ['a', 0, 7, 6],
        ['b', 0, 2, 2],
      ],
      [['b', 2, 10, 8]],
      [['b', 10, 12, 2]],
    ],
  );
});
