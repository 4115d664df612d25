// The device lane budget (src/engine/lane-budget.ts) against the cuda backend's own allocator: the `small` synthetic
// checkpoint on cuda with more lanes than the whole context fits for, so the cap decides each lane's rows. Plan then
// allocates at least the counted slabs, tables and records, and what else it allocates (scratch, activations, the
// experts packed for the kernels) stays within what the budget set aside for it; a request over a lane is refused
// with its bytes, and one that fits is served. Skips, saying why, without a CUDA device.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CudaBackend } from '../../src/backend/cuda/backend.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import type { CudaBuffer } from '../../src/backend/cuda/tensors.ts';
import { EngineCore } from '../../src/engine/engine-core.ts';
import { planBytes } from '../../src/engine/lane-bytes.ts';
import { loadRuntime } from '../../src/engine/load-runtime.ts';
import type { EngineEvent } from '../../src/engine/protocol.ts';
import type { SlotSpeechModel } from '../../src/model/speech-model.ts';
import { DEFAULT_SAMPLING } from '../../src/model/types.ts';
import { speechCheckpointDir } from './support/speech-model-checkpoint.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `needs a CUDA device: ${availability.reason}`;
/** The small geometry's lanes hold 14336 bytes a row: 40 lanes of the whole context would need about 154 GB. */
const LANES = 40;
const PREFILL_CHUNK = 64;

function job(text: string, maxFrames: number) {
  const sampling = { ...DEFAULT_SAMPLING, seed: 5 };
  return {
    text,
    instructions: undefined,
    references: [],
    sampling,
    maxFrames,
    normalize: true,
    pieceLength: undefined,
  };
}

test('small on cuda: the cap decides the rows of 40 lanes and covers what plan allocates beside the slabs', {
  skip,
}, async () => {
  const dir = await speechCheckpointDir('small');
  const runtime = await loadRuntime({
    kind: 'checkpoint',
    dir,
    prefillChunk: PREFILL_CHUNK,
    backend: 'cuda',
    codecBackend: 'cpu',
  });
  const memory = runtime.memory!;
  assert.ok(memory !== undefined, 'a cuda runtime reports its device ledger');
  const before = memory.device();
  const events: EngineEvent[] = [];
  const settings = { lanes: LANES, prefillChunk: 256, maxFrames: 262144, maxInputCodePoints: 4096, pieceLength: 1000 };
  const core = new EngineCore(runtime, { ...settings, referenceCacheBytes: 0 }, (event) => events.push(event));
  const after = memory.device();
  const { info } = core;
  const contextRows = memory.config.text.maxPositions;
  console.log(
    `${LANES} lanes of ${info.rowsPerLane} rows (context ${contextRows}); device ${before.usedBytes} bytes before plan, ` +
      `${after.usedBytes} after, limit ${after.limitBytes}`,
  );
  assert.ok(info.rowsPerLane < contextRows, `${info.rowsPerLane} rows: the cap should decide them`);
  const counted = planBytes(memory.config, { lanes: LANES, rowsPerLane: info.rowsPerLane }, PREFILL_CHUNK);
  const beside = after.usedBytes - before.usedBytes - counted.total;
  const setAside = info.memory.setAsideBytes ?? 0;
  console.log(`plan allocated ${beside} bytes beside the counted ${counted.total}; the budget set ${setAside} aside`);
  assert.ok(
    beside >= 0,
    `plan allocated ${after.usedBytes - before.usedBytes}, less than the counted ${counted.total}`,
  );
  assert.ok(beside <= setAside, `plan allocated ${beside} bytes beside the slabs, more than the ${setAside} set aside`);
  assert.ok(after.usedBytes <= after.limitBytes);
  // A request over its lane is refused before any audio, naming its bytes; one that fits is served.
  const overLane = info.rowsPerLane;
  core.handle({ type: 'submit', id: 1, job: job('Hello there.', overLane) });
  const refused = events.find((event) => event.type === 'failed' && event.id === 1);
  assert.ok(refused?.type === 'failed', 'refused at once');
  assert.equal(refused.error.code, 'MEMORY_BUDGET_EXCEEDED');
  assert.match(refused.error.message, /device bytes: 14336 a row/);
  core.handle({ type: 'submit', id: 2, job: job('Hello there.', 4) });
  const end = (event: EngineEvent) => (event.type === 'finished' || event.type === 'failed') && event.id === 2;
  while (!events.some(end)) await new Promise((resolve) => setTimeout(resolve, 10));
  const ended = events.find(end);
  assert.equal(ended?.type, 'finished', JSON.stringify(ended));
  core.handle({ type: 'shutdown' });
  ((runtime.model as SlotSpeechModel<CudaBuffer>).backend as CudaBackend).close();
});
