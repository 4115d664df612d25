// The lane budget on a device (src/engine/lane-budget.ts): the rows every slot gets are the most that fit under the
// allocation cap beside what is set aside, an explicit row budget only lowers them, and too many lanes are refused
// by name at start. Then admission (src/engine/admission.ts) in those bytes: refusals name the quantity, its bytes
// and the most that fits. Host arithmetic only.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REAL_CODEC_CONFIG } from '../../src/codec/config.ts';
import { type AdmissionLimits, frameBudget } from '../../src/engine/admission.ts';
import {
  ACTIVATION_RESERVE_BYTES,
  type DeviceBudgetRequest,
  deviceBudget,
  poolCost,
  requestCost,
  rowBudget,
} from '../../src/engine/lane-budget.ts';
import { expertLayerBytes, laneBytes, laneStateBytesFor } from '../../src/engine/lane-bytes.ts';
import { type Drama3Config, FP8_BLOCK_QUANTIZATION, FULL_PRESET } from '../../src/model/config.ts';
import { tinyConfig } from '../model/tiny-config.ts';

const FULL: Drama3Config = tinyConfig({
  ...FULL_PRESET,
  codec: REAL_CODEC_CONFIG,
  quantization: FP8_BLOCK_QUANTIZATION,
});
const GB = 1e9;

function request(config: Drama3Config, lanes: number, limitBytes: number, usedBytes: number): DeviceBudgetRequest {
  return {
    lanes,
    contextRows: config.text.maxPositions,
    memoryRows: undefined,
    referenceCacheBytes: 256 * 1024 ** 2,
    memory: { config, prefillChunk: 256, codecStreams: 64, device: () => ({ limitBytes, usedBytes }) },
  };
}

test('at the real geometry under an H200 cap, 4 lanes hold the whole context and 8 lanes what fits', () => {
  const limit = 0.9 * 141 * GB;
  const weights = 38.7 * GB;
  const four = deviceBudget(request(FULL, 4, limit, weights));
  assert.equal(four.rowsPerLane, 262144);
  assert.equal(four.poolRows, 4 * 262144);
  const eight = deviceBudget(request(FULL, 8, limit, weights));
  const bytes = laneBytes(FULL);
  const reserved = eight.device!.reservedBytes;
  // Nine slots (the planning slot too) at the granted rows fit; one row more does not.
  const held = (rows: number) => weights + reserved + 9 * laneStateBytesFor(bytes, rows);
  assert.ok(held(eight.rowsPerLane) <= limit, 'the granted rows fit under the cap');
  assert.ok(held(eight.rowsPerLane + 1) > limit, 'one row more would not');
  assert.ok(eight.rowsPerLane > 150000 && eight.rowsPerLane < 262144, `${eight.rowsPerLane} rows`);
  // What was set aside covers the activation reserve, one layer of experts being packed, the cache and 64 codec lanes.
  const floor = ACTIVATION_RESERVE_BYTES + expertLayerBytes(FULL) + 256 * 1024 ** 2 + 64 * 8925440;
  assert.ok(reserved > floor && reserved < floor + 2 * GB, `${reserved} bytes set aside`);
  assert.equal(eight.perRow, 47104);
  assert.equal(requestCost(eight, 100), bytes.fixedPerLane + 100 * 47104);
  assert.equal(poolCost(eight), 8 * bytes.fixedPerLane + eight.poolRows * 47104);
});

test('an explicit row budget lowers the rows of a lane and of all lanes, never raises them', () => {
  const limit = 0.9 * 141 * GB;
  const lowered = deviceBudget({ ...request(FULL, 4, limit, 38.7 * GB), memoryRows: 70000 });
  assert.equal(lowered.rowsPerLane, 70000);
  assert.equal(lowered.poolRows, 70000);
  const eight = deviceBudget(request(FULL, 8, limit, 38.7 * GB));
  const raised = deviceBudget({ ...request(FULL, 8, limit, 38.7 * GB), memoryRows: 10 * 262144 });
  assert.equal(raised.rowsPerLane, eight.rowsPerLane);
  assert.equal(raised.poolRows, 8 * eight.rowsPerLane);
});

test('lanes that cannot each hold a prefill chunk are refused at start, naming the bytes', () => {
  assert.throws(
    () => deviceBudget(request(FULL, 8, 40 * GB, 38.7 * GB)),
    (error: Error & { code?: string }) => {
      assert.equal(error.code, 'LANE_MEMORY_INSUFFICIENT');
      assert.match(error.message, /^8 lanes need \d+ device bytes with 257 rows each \(47104 bytes a row/);
      assert.match(error.message, /over the allocation limit of 40000000000: use fewer lanes$/);
      return true;
    },
  );
});

function tinyLimits(rowsPerLane: number): AdmissionLimits {
  const config = tinyConfig();
  const probe = deviceBudget({ ...request(config, 2, 1e12, 0), contextRows: 4096 });
  const reserved = probe.device!.reservedBytes;
  // A cap that leaves exactly `rowsPerLane` rows to each of the three slots.
  const limit = reserved + 3 * laneStateBytesFor(laneBytes(config), rowsPerLane) + 3 * 1920 - 1;
  const budget = deviceBudget({ ...request(config, 2, limit, 0), contextRows: 4096 });
  assert.equal(budget.rowsPerLane, rowsPerLane);
  return { contextRows: 4096, maxFrames: 4000, maxInputCodePoints: 100, budget };
}

test('an explicit max_frames that no lane holds is refused with its bytes and the most that fits', () => {
  const limits = tinyLimits(300);
  assert.equal(frameBudget(9, 290, limits, 1), 290);
  assert.throws(() => frameBudget(9, 291, limits, 1), {
    code: 'MEMORY_BUDGET_EXCEEDED',
    param: 'max_frames',
    message:
      "prompt rows 9 + max_frames 291 + 1 = 301 rows exceed a lane's memory of 300 rows (605292 device bytes: " +
      '1920 a row, 29292 a lane); 291 frames take 558720 device bytes; at most 290 frames fit after 9 prompt rows',
  });
  // The context window is checked first, and names its own limit.
  assert.throws(() => frameBudget(100, 3996, limits, 1), { code: 'CONTEXT_OVERFLOW' });
});

test('a prompt that leaves a lane no room for a frame is refused with its bytes and the most prompt rows that fit', () => {
  const limits = tinyLimits(300);
  assert.equal(frameBudget(298, undefined, limits, 1), 1);
  assert.throws(() => frameBudget(299, undefined, limits, 1), {
    code: 'MEMORY_BUDGET_EXCEEDED',
    param: 'input',
    message:
      "prompt rows 299 (603372 device bytes) leave no room for a frame in a lane's memory of 300 rows " +
      '(605292 device bytes: 1920 a row, 29292 a lane); at most 298 prompt rows fit',
  });
});

test('without max_frames the budget is what fits the lane, the context and the text ceiling', () => {
  const limits = tinyLimits(300);
  assert.equal(frameBudget(9, undefined, limits, 100), 300 - 9 - 1);
  assert.equal(frameBudget(9, undefined, limits, 1), 64 + 32);
  const rows = { ...limits, budget: rowBudget(2, 4096, 200) };
  assert.equal(frameBudget(9, undefined, rows, 100), 200 - 9 - 1);
  assert.throws(() => frameBudget(9, 191, rows, 1), {
    code: 'MEMORY_BUDGET_EXCEEDED',
    message:
      "prompt rows 9 + max_frames 191 + 1 = 201 rows exceed a lane's memory of 200 rows; at most 190 frames fit after 9 prompt rows",
  });
});

test('a prefill chunk of at most 64 rows sets aside its attention workspace, larger than a step of few lanes', () => {
  const limit = 0.9 * 141 * GB;
  const at = (prefillChunk: number) => {
    const base = request(FULL, 4, limit, 38.7 * GB);
    return deviceBudget({ ...base, memory: { ...base.memory, prefillChunk } }).device!.reservedBytes;
  };
  // 64 rows instead of 4 of fp32 partials: 16 heads × 1024 splits of 256 keys × (256 + 2), twice for scratch growth.
  const workspace = 2 * (64 - 4) * 16 * 1024 * 258 * 4;
  assert.ok(at(64) - at(256) >= workspace - 256 * 1024, `${at(64) - at(256)} bytes more, expected about ${workspace}`);
});

test("the CUDA codec's own weights and scratch are set aside beside its lanes' state, byte for byte", () => {
  const limit = 0.9 * 141 * GB;
  const without = deviceBudget(request(FULL, 8, limit, 38.7 * GB));
  const codecBytes = 1.5 * GB;
  const base = request(FULL, 8, limit, 38.7 * GB);
  const withCodec = deviceBudget({ ...base, memory: { ...base.memory, codecDeviceBytes: codecBytes } });
  assert.equal(withCodec.device!.reservedBytes - without.device!.reservedBytes, codecBytes);
  assert.ok(withCodec.rowsPerLane < without.rowsPerLane, 'the lanes hold fewer rows beside the codec');
});
