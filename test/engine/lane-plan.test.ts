// The lanes' plan made while the runtime loads (src/engine/lane-plan.ts): planned when the load hands the model on,
// a refusal held until the engine takes the plan (after the load has settled, so a failed load is reported first),
// and no plan made when no model was handed on (the null runtime: the engine plans then, as before).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_ENGINE_SETTINGS, EngineCore } from '../../src/engine/engine-core.ts';
import { rowBudget } from '../../src/engine/lane-budget.ts';
import { EarlyLanePlan, planNotice } from '../../src/engine/lane-plan.ts';
import { loadRuntime } from '../../src/engine/load-runtime.ts';
import { isDramaError } from '../../src/errors.ts';
import type { SpeechModel } from '../../src/model/types.ts';
import { tinyCheckpointDir } from '../model/tiny-checkpoint.ts';
import { recordingModel } from './support.ts';

// Made once at the top level: its folder is removed after the file's tests.
const tiny = await tinyCheckpointDir();

test('told the model, the early plan plans once and the engine takes that plan', async () => {
  const { model, planned } = recordingModel();
  const settings = { ...DEFAULT_ENGINE_SETTINGS, lanes: 2, memoryRows: 1000 };
  const lanes = new EarlyLanePlan(settings);
  lanes.onModel(model, undefined);
  assert.deepEqual(planned, [{ lanes: 2, rowsPerLane: 1000 }]);
  const runtime = await loadRuntime({ kind: 'null' });
  const core = new EngineCore({ ...runtime, model }, settings, () => {}, undefined, lanes.take());
  assert.equal(planned.length, 1);
  assert.equal(core.info.rowsPerLane, 1000);
  core.handle({ type: 'shutdown' });
});

test('a refused plan is held, not thrown into the load, and rethrown when the engine takes it', () => {
  const { model, planned } = recordingModel();
  const lanes = new EarlyLanePlan({ lanes: 0 });
  assert.doesNotThrow(() => lanes.onModel(model, undefined));
  assert.deepEqual(planned, []);
  assert.throws(
    () => lanes.take(),
    (error: unknown) => isDramaError(error) && error.code === 'LANES_INVALID',
  );
});

test("a checkpoint's runtime hands its model on during the load; the null runtime's is planned by the engine", async () => {
  const handed: { model: SpeechModel; memory: unknown }[] = [];
  const onModel = (model: SpeechModel, memory: unknown) => handed.push({ model, memory });
  const runtime = await loadRuntime({ kind: 'checkpoint', dir: tiny, backend: 'cpu', prefillChunk: 16 }, { onModel });
  assert.deepEqual(handed, [{ model: runtime.model, memory: undefined }]);
  const lanes = new EarlyLanePlan(DEFAULT_ENGINE_SETTINGS);
  await loadRuntime({ kind: 'null' }, { onModel: lanes.onModel });
  assert.equal(lanes.take(), undefined);
});

test("a plan's notice says where its seconds went where the model measured them", () => {
  const budget = rowBudget(4, 8192, undefined);
  const plain = planNotice({ budget, seconds: 2.04 }, 4);
  assert.equal(plain, `lanes planned: 4 of ${budget.rowsPerLane} rows in 2.0 s`);
  const times = { slotSeconds: 0.25, firstRunSeconds: 0.7, recordings: 0, recordingSeconds: 0 };
  assert.equal(
    planNotice({ budget, seconds: 0.96, times }, 4),
    `lanes planned: 4 of ${budget.rowsPerLane} rows in 1.0 s (slots in 0.25 s, the first prefill and step in 0.70 s)`,
  );
  assert.equal(
    planNotice({ budget, seconds: 2.04, times: { ...times, recordings: 7, recordingSeconds: 1.089 } }, 4),
    `lanes planned: 4 of ${budget.rowsPerLane} rows in 2.0 s (slots in 0.25 s, the first prefill and step in 0.70 s, ` +
      '7 step graphs recorded in 1.09 s)',
  );
});
