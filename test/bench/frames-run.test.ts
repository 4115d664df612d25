// The frame bench's run, host side: over the cuda backend on a host imitation of the driver (launches recorded, not
// run) with the attention, DeltaNet, MoE and SwiGLU blocks as no-ops, the bench builds the small model, plans,
// prefills, steps every batch, profiles, times prefill and writes its report without a GPU. Numbers are meaningless
// here; what is checked is that the run holds together (positions within the plan, lanes released, tables filled).
// A second run keeps the blocks real: at its small batches they must record the decode folds and the few-rows attention
// walk, and its 8-row prefill the per-row walk in blocks of 4 heads.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { framesReport } from '../../bench/support/frames-report.ts';
import { DEFAULT_FRAMES_OPTIONS, measureFrames } from '../../bench/support/frames-run.ts';
import { CudaBackend } from '../../src/backend/cuda/backend.ts';
import type { DeviceProperties } from '../../src/backend/cuda/context.ts';
import { FakeDriver, fakeContext, observeArguments } from '../backend/support/fake-cuda.ts';

const device: DeviceProperties = {
  name: 'host imitation',
  computeCapability: [9, 0],
  multiprocessors: 1,
  l2CacheBytes: 0,
  totalBytes: 2 ** 30,
  driverVersion: 0,
};

/** A short run of the small preset over 4 lanes, steps at batches 1 and 4. */
const SMALL_RUN = {
  ...DEFAULT_FRAMES_OPTIONS,
  preset: 'small',
  lanes: 4,
  batches: [1, 4],
  warmupSteps: 1,
  prefillRuns: 1,
  rowsPerLane: 200,
};
const COPY = { bytes: 1, milliseconds: 1, gigabytesPerSecond: 4000 };

/** A driver imitation whose events time every interval at 1 ms and which reports half its memory free. */
function timedDriver(): FakeDriver {
  const driver = new FakeDriver();
  let clock = 0;
  Object.assign(driver, {
    createEvent: () => 1n,
    destroyEvent: () => {},
    recordEvent: () => {},
    synchronizeEvent: () => {},
    elapsedMilliseconds: () => ++clock,
    memoryInfo: () => ({ freeBytes: 2 ** 29, totalBytes: 2 ** 30 }),
  });
  return driver;
}

test('the frame bench runs end to end on the small preset and reports every batch, prefill and profile', async () => {
  const driver = timedDriver();
  const cuda = fakeContext(driver);
  const noOp = { value: () => {} };
  const backend = Object.create(new CudaBackend(cuda), {
    attention: noOp,
    deltaNet: noOp,
    moe: noOp,
    swiGlu: noOp,
  }) as CudaBackend;
  const options = { ...SMALL_RUN, stepsPerRun: 2, runs: 3, prefillRows: [8, 16] };
  const measured = await measureFrames(cuda, backend, options, COPY);
  assert.deepEqual(
    measured.batches.map((b) => b.batch),
    [1, 4],
  );
  assert.deepEqual(
    measured.prefill.map((p) => p.rows),
    [8, 16],
  );
  assert.equal(measured.rowsPerLane, 200, 'lanes planned for the rows asked, more than the run needs');
  assert.equal(measured.profiles.length, 2);
  // The profile saw the step's launches (the frame record moves, norms, the sampler...).
  assert.ok(measured.profiles[0]!.profile.launches > 10, `${measured.profiles[0]!.profile.launches}`);
  const { lines, json } = framesReport(measured, device);
  assert.ok(
    lines.some((line) => line.startsWith('| 4 |')),
    lines.join('\n'),
  );
  assert.ok(lines.some((line) => line.includes('prefill rows')));
  assert.equal(JSON.parse(JSON.stringify(json)).batches.length, 2);
  measured.release();
});

test('the real blocks record their fused launches in the bench run, decode attention in blocks of 4 heads', async () => {
  const driver = timedDriver();
  const stop = observeArguments(driver);
  try {
    const cuda = fakeContext(driver);
    Object.assign(cuda, { properties: device });
    const backend = new CudaBackend(cuda);
    const options = { ...SMALL_RUN, stepsPerRun: 1, runs: 1, prefillRows: [8] };
    const measured = await measureFrames(cuda, backend, options, COPY);
    const names = new Set(driver.launches.map((launch) => launch.name));
    // Batches 1 and 4 are within both folds' row limits and the few-rows attention's. The synthetic model keeps A_log
    // and dt_bias in bf16: the combine's entry for those.
    for (const kernel of [
      'delta_net_combine_bf16_parameters',
      'attention_qkv_prepare_bf16',
      'attention_few_rows_bf16_d256',
    ]) {
      assert.ok(names.has(kernel), `${kernel} launched`);
    }
    const decodeAttention = driver.launches.filter((launch) => launch.name === 'attention_bf16_d256');
    assert.ok(decodeAttention.length > 0);
    assert.ok(
      decodeAttention.every((launch) => launch.shape.block[0] === 128),
      'the per-row walk past 4 rows (the 8-row prefill) in blocks of 4 heads',
    );
    measured.release();
  } finally {
    stop();
  }
});
