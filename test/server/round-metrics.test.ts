// /metrics carries the engine's frame rounds by kind as counters: each scrape adds what the engine's totals grew by,
// so the counters equal the totals while the engine lives and keep rising when a restarted engine counts from zero.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EngineLoad } from '../../src/engine/engine.ts';
import type { RoundTime } from '../../src/engine/protocol.ts';
import { createMetrics } from '../../src/server/metrics.ts';

const LOAD: EngineLoad = { inFlight: 0, queued: 0, lanesBusy: 0, decodeBacklog: 0, laneMemoryFree: 0 };

function rounds(prefillRounds: number, prefillRows: number, stepRounds: number, laneSteps: number): RoundTime {
  return {
    prefillRounds,
    prefillRoundMs: 20 * prefillRounds,
    prefillRows,
    stepRounds,
    stepRoundMs: 5 * stepRounds,
    laneSteps,
    stepCallMs: 4 * stepRounds,
    longestStepCallMs: 4,
    stepRecordings: 0,
    directSteps: 0,
    stepReplays: 0,
    stepReplayMs: 0,
    stepTablesMs: 0,
    stepEnqueueMs: 0,
    stepReadBackMs: 0,
  };
}

const value = (metrics: string, name: string, kind: string) =>
  Number(new RegExp(`^${name}\\{kind="${kind}"\\} ([0-9.e+-]+)$`, 'm').exec(metrics)?.[1]);

test('the round counters follow the engine totals, and a restarted engine adds on instead of going back', async () => {
  let roundTime: RoundTime | undefined;
  const { registry } = createMetrics(() => ({ ...LOAD, roundTime }), false);
  const scrape = () => registry.metrics();
  assert.ok(Number.isNaN(value(await scrape(), 'drama3_engine_rounds_total', 'prefill')), 'no series before a round');
  roundTime = rounds(3, 88, 44, 45);
  let metrics = await scrape();
  assert.equal(value(metrics, 'drama3_engine_rounds_total', 'prefill'), 3);
  assert.equal(value(metrics, 'drama3_engine_rounds_total', 'step'), 44);
  assert.equal(value(metrics, 'drama3_engine_rows_total', 'prefill'), 88);
  assert.equal(value(metrics, 'drama3_engine_rows_total', 'step'), 45);
  assert.equal(value(metrics, 'drama3_engine_round_seconds_total', 'prefill'), 0.06);
  assert.equal(value(metrics, 'drama3_engine_round_seconds_total', 'step'), 0.22);
  roundTime = rounds(5, 100, 60, 61);
  metrics = await scrape();
  assert.equal(value(metrics, 'drama3_engine_rounds_total', 'prefill'), 5);
  assert.equal(value(metrics, 'drama3_engine_rows_total', 'step'), 61);
  // The engine restarted: its totals start from zero again, and the counters add them on.
  roundTime = rounds(1, 10, 2, 2);
  metrics = await scrape();
  assert.equal(value(metrics, 'drama3_engine_rounds_total', 'prefill'), 6);
  assert.equal(value(metrics, 'drama3_engine_rows_total', 'prefill'), 110);
  assert.equal(value(metrics, 'drama3_engine_rows_total', 'step'), 63);
});
