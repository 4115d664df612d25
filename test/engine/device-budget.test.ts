// The engine with its lane state counted in device bytes (the null model under a device ledger of the tiny
// geometry): each lane slot holds the rows that fit the cap, a request over them is refused by name before any
// audio, and requests that fit their lanes run together; with a row budget below the slots, they wait their turn.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Engine } from '../../src/engine/engine.ts';
import { DEFAULT_ENGINE_SETTINGS, type EngineSettings } from '../../src/engine/engine-core.ts';
import { deviceBudget } from '../../src/engine/lane-budget.ts';
import { laneBytes, laneStateBytesFor } from '../../src/engine/lane-bytes.ts';
import type { NullDeviceOptions } from '../../src/engine/load-runtime.ts';
import { tinyConfig } from '../model/tiny-config.ts';
import { job, runToEnd } from './support.ts';

const CONFIG = tinyConfig();
const BYTES = laneBytes(CONFIG);
const USED = 5_000_000;

/** A device whose cap leaves each of the lanes + 1 slots exactly `rows` rows beside what the budget sets aside. */
function deviceFor(lanes: number, rows: number): NullDeviceOptions {
  const memory = { config: CONFIG, prefillChunk: 16, codecStreams: 0 };
  const probe = { lanes, contextRows: 4096, memoryRows: undefined, referenceCacheBytes: 0 };
  const device = () => ({ limitBytes: 1e12, usedBytes: USED });
  const reserved = deviceBudget({ ...probe, memory: { ...memory, device } }).device!.reservedBytes;
  const limitBytes = USED + reserved + (lanes + 1) * laneStateBytesFor(BYTES, rows);
  return { ...memory, limitBytes, usedBytes: USED };
}

function start(settings: Partial<EngineSettings>, device: NullDeviceOptions): Promise<Engine> {
  return Engine.start({
    runtime: { kind: 'null', model: { framesPerRow: 100 }, device },
    settings: { ...DEFAULT_ENGINE_SETTINGS, referenceCacheBytes: 0, ...settings },
    queueLimit: 8,
    thread: 'inline',
  });
}

test('on a device each lane holds the rows that fit the cap; a request over them is refused with its bytes', async () => {
  const device = deviceFor(4, 70);
  const engine = await start({ lanes: 4 }, device);
  assert.equal(engine.info.rowsPerLane, 70);
  assert.equal(engine.info.memoryRows, 4 * 70);
  assert.equal(engine.info.maxFrames, 68);
  assert.deepEqual(engine.info.memory, {
    unit: 'device-bytes',
    laneBudget: 4 * BYTES.fixedPerLane + 4 * 70 * 1920,
    bytesPerPromptRow: 1920,
    bytesPerFrame: 1920,
    fixedBytesPerLane: 29292,
    device: { limitBytes: device.limitBytes, usedBytes: USED },
    // The cap is what is used, what was set aside and the five slots (the planning slot too) at 70 rows.
    setAsideBytes: device.limitBytes - USED - 5 * laneStateBytesFor(BYTES, 70),
  });
  // 'x' takes 9 prompt rows: 61 frames make 71 rows, one more than a lane holds.
  const refused = await runToEnd(engine, job('x', { maxFrames: 61 }));
  assert.equal(refused.events.length, 1, 'refused before any audio');
  assert.equal(refused.last.type === 'failed' && refused.last.error.code, 'MEMORY_BUDGET_EXCEEDED');
  assert.match(
    refused.last.type === 'failed' ? refused.last.error.message : '',
    /71 rows exceed a lane's memory of 70 rows \(163692 device bytes: 1920 a row, 29292 a lane\); 61 frames take 117120 device bytes; at most 60 frames fit/,
  );
  // Past what a lane holds but within the server's frame limit: refused for the lane's memory, not the limit.
  const farOver = await runToEnd(engine, job('x', { maxFrames: 1000 }));
  assert.equal(farOver.last.type === 'failed' && farOver.last.error.code, 'MEMORY_BUDGET_EXCEEDED');
  let busiest = 0;
  engine.on('stats', (stats) => {
    busiest = Math.max(busiest, stats.lanesBusy);
  });
  const outcomes = await Promise.all(
    [1, 2, 3, 4].map((seed) => runToEnd(engine, job('x', { maxFrames: 60, sampling: { ...job('').sampling, seed } }))),
  );
  for (const outcome of outcomes) assert.equal(outcome.last.type === 'finished' && outcome.last.usage.outputFrames, 60);
  assert.equal(busiest, 4, 'every slot is planned whole: four requests that fit a lane run together');
  assert.equal(engine.stats.laneMemoryReserved, 0);
  await engine.close();
});

test('on a device a row budget below the slots makes requests wait until their bytes fit beside those running', async () => {
  const engine = await start({ lanes: 4, memoryRows: 70 }, deviceFor(4, 500));
  assert.equal(engine.info.rowsPerLane, 70);
  assert.equal(engine.info.memory.laneBudget, 4 * 29292 + 70 * 1920);
  let busiest = 0;
  let mostReserved = 0;
  engine.on('stats', (stats) => {
    busiest = Math.max(busiest, stats.lanesBusy);
    mostReserved = Math.max(mostReserved, stats.laneMemoryReserved ?? 0);
  });
  // Each takes 9 + 20 + 1 = 30 rows and its lane's fixed state: two fit the budget at once, three do not.
  const outcomes = await Promise.all(
    [1, 2, 3, 4].map((seed) => runToEnd(engine, job('x', { maxFrames: 20, sampling: { ...job('').sampling, seed } }))),
  );
  for (const outcome of outcomes) assert.equal(outcome.last.type === 'finished' && outcome.last.usage.outputFrames, 20);
  assert.equal(busiest, 2);
  assert.equal(mostReserved, 2 * (29292 + 30 * 1920));
  await engine.close();
});
