// The whole context window on CUDA (issue: serving on the GPU): on the `small` synthetic checkpoint (context 262144
// rows, the real model's), a request whose prompt rows P and explicit max_frames F give P + F + 1 = 262144 exactly is
// admitted and runs to its last frame; the same request with one frame more is refused by name before any audio. The
// prompt is one long text piece, sized by reading P off the engine's own CONTEXT_OVERFLOW refusals, so the test
// depends on no tokenizer count. Prints the lane bytes the full window needed. Skips, saying why, without a CUDA device.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CudaBackend } from '../../src/backend/cuda/backend.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import type { CudaBuffer } from '../../src/backend/cuda/tensors.ts';
import { EngineCore } from '../../src/engine/engine-core.ts';
import { loadRuntime } from '../../src/engine/load-runtime.ts';
import type { EngineEvent } from '../../src/engine/protocol.ts';
import type { SlotSpeechModel } from '../../src/model/speech-model.ts';
import { DEFAULT_SAMPLING } from '../../src/model/types.ts';
import { speechCheckpointDir } from './support/speech-model-checkpoint.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `needs a CUDA device: ${availability.reason}`;
const CONTEXT = 262144;
/** Words that tokenize into many short tokens; the prompt repeats them. */
const UNIT = 'one two three four five six seven eight nine ten. ';
const LONGEST_TEXT = 4_000_000;
/** Rows a prefill call: with the small preset's one KV head a call of 256 rows is 64 blocks of the grouped attention. */
const PREFILL_CHUNK = 2048;

function job(text: string, maxFrames: number) {
  return {
    text,
    instructions: undefined,
    references: [],
    sampling: { ...DEFAULT_SAMPLING, seed: 11 },
    maxFrames,
    normalize: false,
    pieceLength: LONGEST_TEXT,
  };
}

test('small on cuda: P + F + 1 = 262144 is admitted and runs to its end; one frame more is refused', {
  skip,
  timeout: 15 * 60_000,
}, async () => {
  const dir = await speechCheckpointDir('small');
  const runtime = await loadRuntime({
    kind: 'checkpoint',
    dir,
    prefillChunk: PREFILL_CHUNK,
    backend: 'cuda',
    codecBackend: 'cpu',
  });
  const events: EngineEvent[] = [];
  const settings = {
    lanes: 1,
    prefillChunk: PREFILL_CHUNK,
    maxFrames: CONTEXT,
    maxInputCodePoints: LONGEST_TEXT,
    pieceLength: LONGEST_TEXT,
    referenceCacheBytes: 0,
  };
  const firstAudio = new Map<number, number>();
  const core = new EngineCore(runtime, settings, (event) => {
    if (event.type === 'audio' && !firstAudio.has(event.id)) firstAudio.set(event.id, performance.now());
    events.push(event);
  });
  const { info } = core;
  assert.equal(info.contextRows, CONTEXT);
  assert.ok(info.rowsPerLane >= CONTEXT, `one lane holds ${info.rowsPerLane} rows, less than the window`);
  let nextId = 1;
  const outcome = async (text: string, frames: number) => {
    const id = nextId++;
    core.handle({ type: 'submit', id, job: job(text, frames) });
    const end = (event: EngineEvent) => (event.type === 'finished' || event.type === 'failed') && event.id === id;
    while (!events.some(end)) await new Promise((resolve) => setTimeout(resolve, 20));
    return { id, ended: events.find(end)! };
  };
  // P of a text: asking for as many frames as the window allows makes the engine refuse, naming P.
  const promptRows = async (text: string): Promise<number> => {
    const { ended } = await outcome(text, CONTEXT - 2);
    assert.ok(ended.type === 'failed' && ended.error.code === 'CONTEXT_OVERFLOW', JSON.stringify(ended));
    return Number(/prompt rows (\d+)/.exec(ended.error.message)![1]);
  };
  const began = performance.now();
  const seconds = () => ((performance.now() - began) / 1000).toFixed(1);
  const base = await promptRows(UNIT.repeat(1000));
  const perUnit = ((await promptRows(UNIT.repeat(2000))) - base) / 1000;
  assert.ok(Number.isInteger(perUnit) && perUnit > 0, `rows a unit: ${perUnit}`);
  const units = 1000 + Math.floor((CONTEXT - 2 - base) / perUnit);
  const text = UNIT.repeat(units);
  const rows = await promptRows(text);
  const frames = CONTEXT - 1 - rows;
  assert.ok(frames >= 1 && frames <= perUnit + 1, `P = ${rows} leaves ${frames} frames`);
  console.log(
    `${seconds()} s: prompt of ${text.length} code points: P = ${rows}, F = ${frames}, P + F + 1 = ${rows + frames + 1}`,
  );

  const over = await outcome(text, frames + 1);
  assert.ok(over.ended.type === 'failed', 'one frame over the window is refused');
  assert.equal(over.ended.error.code, 'CONTEXT_OVERFLOW');
  assert.match(over.ended.error.message, new RegExp(`= ${CONTEXT + 1} exceeds the context window of ${CONTEXT}`));
  assert.ok(!events.some((event) => event.type === 'audio' && event.id === over.id), 'no audio before the refusal');
  console.log(`${seconds()} s: P + ${frames + 1} + 1 refused: ${over.ended.error.message}`);

  // Where the long prefill is, every 32768 rows (the scheduler prefills one chunk a round, in a joint prefill).
  const model = runtime.model as SlotSpeechModel<CudaBuffer>;
  const prefillTogether = model.prefillTogether.bind(model);
  let reported = 0;
  model.prefillTogether = (parts) => {
    prefillTogether(parts);
    const to = Math.max(...parts.map((part) => part.to));
    if (to - reported >= 32768) {
      reported = to;
      console.log(`${seconds()} s: ${to} prompt rows prefilled`);
    }
  };
  const started = performance.now();
  const full = await outcome(text, frames);
  const took = (performance.now() - started) / 1000;
  assert.equal(full.ended.type, 'finished', JSON.stringify(full.ended));
  const admitted = events.find((event) => event.type === 'admitted' && event.id === full.id);
  assert.ok(admitted?.type === 'admitted');
  assert.equal(admitted.admission.promptRows + admitted.admission.frameBudget + 1, CONTEXT);
  if (full.ended.type === 'finished') {
    const spoken = full.ended.usage.outputFrames;
    assert.ok(spoken >= 1 && spoken <= frames, `${spoken} frames of at most ${frames}`);
    const { fixedBytesPerLane, bytesPerPromptRow, bytesPerFrame } = info.memory;
    const laneBytes = (fixedBytesPerLane ?? 0) + (bytesPerPromptRow ?? 0) * rows + (bytesPerFrame ?? 0) * (frames + 1);
    console.log(
      `the full window ran in ${took.toFixed(1)} s (first audio after ${((firstAudio.get(full.id)! - started) / 1000).toFixed(1)} s): ${spoken} frames (${full.ended.reason}); its lane needed ${laneBytes} device bytes`,
    );
  }
  core.handle({ type: 'shutdown' });
  ((runtime.model as SlotSpeechModel<CudaBuffer>).backend as CudaBackend).close();
});
