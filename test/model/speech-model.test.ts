// Exactness contracts of the cpu speech model on the tiny synthetic checkpoint: any prefill chunking gives the same
// frames; the same seed gives the same frames; seeds differ; greedy is deterministic; a lane gives the same frames
// alone or beside another; a frame budget without end of speech finishes with `length`; the config's unread keys and
// defaulted sections reach the caller.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CpuBackend } from '../../src/backend/cpu/backend.ts';
import { generateFrames } from '../../src/model/generate.ts';
import { loadSpeechModel } from '../../src/model/load-model.ts';
import { DEFAULT_SAMPLING, type Frame, type SamplingSettings } from '../../src/model/types.ts';
import { loadTinyModel, samplePrompt, tinyCheckpointDir } from './tiny-checkpoint.ts';

const model = await loadTinyModel();
const prompt = samplePrompt(model.candidates.semanticBegin);
const FRAMES = 24;

function frames(sampling: SamplingSettings, prefillChunk: number, maxFrames = FRAMES): Frame[] {
  return generateFrames(model, prompt, { sampling, maxFrames, prefillChunk }).frames;
}

const asLists = (list: Frame[]) => list.map((frame) => Array.from(frame));

test('prefill in chunks of 1, 7, 64 and whole gives bit-identical frames', () => {
  const sampling = { ...DEFAULT_SAMPLING, seed: 11 };
  const whole = asLists(frames(sampling, 1000));
  assert.ok(whole.length > 0);
  for (const chunk of [1, 7, 64]) assert.deepEqual(asLists(frames(sampling, chunk)), whole, `chunk ${chunk}`);
});

test('the same seed gives identical frames twice; different seeds differ', () => {
  const first = asLists(frames({ ...DEFAULT_SAMPLING, seed: 3 }, 64));
  assert.deepEqual(asLists(frames({ ...DEFAULT_SAMPLING, seed: 3 }, 64)), first);
  assert.notDeepEqual(asLists(frames({ ...DEFAULT_SAMPLING, seed: 4 }, 64)), first);
});

test('greedy is deterministic and ignores the seed', () => {
  const greedy = asLists(frames({ ...DEFAULT_SAMPLING, greedy: true, seed: 1 }, 64));
  assert.deepEqual(asLists(frames({ ...DEFAULT_SAMPLING, greedy: true, seed: 99 }, 64)), greedy);
});

test('frames are in range: code[0] < 4096, code[1..9] < 1024', () => {
  for (const frame of frames({ ...DEFAULT_SAMPLING, seed: 5 }, 64)) {
    assert.equal(frame.length, 10);
    assert.ok(frame[0]! >= 0 && frame[0]! < 4096);
    for (let k = 1; k < 10; k++) assert.ok(frame[k]! >= 0 && frame[k]! < 1024, `code[${k}] = ${frame[k]}`);
  }
});

test('a lane gives the same frames alone or in a batch with another lane', () => {
  const alone = asLists(frames({ ...DEFAULT_SAMPLING, seed: 21 }, 64, 8));
  const first = model.newLane({ ...DEFAULT_SAMPLING, seed: 21 });
  const second = model.newLane({ ...DEFAULT_SAMPLING, seed: 22 });
  const other = samplePrompt(model.candidates.semanticBegin);
  model.prefill(first, prompt, 0, prompt.tokens.length);
  model.prefill(second, other, 0, 50);
  model.prefill(second, other, 50, other.tokens.length);
  const batched: number[][] = [];
  for (let round = 0; round < alone.length; round++) {
    const [outcome] = model.step([first, second]);
    assert.ok(outcome !== undefined && !outcome.end);
    batched.push(Array.from(outcome.frame));
  }
  model.release(first);
  model.release(second);
  assert.deepEqual(batched, alone);
});

test('a frame budget reached without end of speech returns the frames with finish reason length', () => {
  const result = generateFrames(model, prompt, {
    sampling: { ...DEFAULT_SAMPLING, seed: 2 },
    maxFrames: 5,
    prefillChunk: 64,
  });
  // The random tiny model practically never draws <|im_end|> (1 of 4097 candidates) in 5 frames at this seed.
  assert.equal(result.finishReason, 'length');
  assert.equal(result.frames.length, 5);
});

test('the lane runs prompt rows then one row per frame; a released lane is refused', () => {
  const lane = model.newLane({ ...DEFAULT_SAMPLING, seed: 8 });
  model.prefill(lane, prompt, 0, prompt.tokens.length);
  // The backbone and tower have run every prompt row but the last; the first step runs it.
  assert.equal(model.snapshot(lane).rows, prompt.tokens.length - 1);
  model.step([lane]);
  model.step([lane]);
  assert.equal(lane.position, prompt.tokens.length + 2);
  model.release(lane);
  assert.throws(() => model.step([lane]), { code: 'LANE_NOT_LIVE' });
});

test('prefill must continue where the lane stands', () => {
  const lane = model.newLane(DEFAULT_SAMPLING);
  assert.throws(() => model.prefill(lane, prompt, 5, 10), { code: 'PREFILL_OUT_OF_ORDER' });
  assert.throws(() => model.step([lane]), { code: 'STEP_BEFORE_PREFILL' });
  model.release(lane);
});

test('a lane restored from a snapshot of a prefix gives the frames of an uncached lane', () => {
  const sampling = { ...DEFAULT_SAMPLING, seed: 31 };
  const uncached = asLists(frames(sampling, 64, 8));
  const prefix = model.newLane(DEFAULT_SAMPLING);
  model.prefill(prefix, prompt, 0, 70);
  const allocations = model.backend.allocations;
  const snapshot = model.snapshot(prefix);
  assert.equal(model.backend.allocations, allocations, 'a snapshot leaves the recorded steps valid');
  model.release(prefix);
  for (let attempt = 0; attempt < 2; attempt++) {
    const lane = model.restore(snapshot, sampling);
    model.prefill(lane, prompt, 70, prompt.tokens.length);
    const drawn = Array.from({ length: uncached.length }, () => {
      const [outcome] = model.step([lane]);
      assert.ok(outcome !== undefined && !outcome.end);
      return Array.from(outcome.frame);
    });
    model.release(lane);
    assert.deepEqual(drawn, uncached, `restore ${attempt}`);
  }
});

test('the loaded model carries the config keys nothing read and the sections filled in, for the caller to report', async () => {
  assert.deepEqual(model.unknownKeys, []);
  assert.deepEqual(model.defaulted, []);
  const tinyDir = await tinyCheckpointDir();
  const dir = await mkdtemp(join(tmpdir(), 'drama3-config-notes-'));
  after(() => rm(dir, { recursive: true, force: true }));
  for (const name of await readdir(tinyDir)) {
    if (name !== 'config.json') await symlink(join(tinyDir, name), join(dir, name));
  }
  const json = JSON.parse(await readFile(join(tinyDir, 'config.json'), 'utf8'));
  json.release_notes = 'new';
  json.text_config.future_knob = 1;
  delete json.codec_config;
  await writeFile(join(dir, 'config.json'), JSON.stringify(json));
  const noted = await loadSpeechModel(dir, new CpuBackend());
  assert.deepEqual([...noted.unknownKeys].sort(), ['release_notes', 'text_config.future_knob']);
  assert.deepEqual(noted.defaulted, ['codec_config']);
});

test('steps queued ahead of their read back give the frames of steps read one by one; a step is collected once', () => {
  const sampling = { ...DEFAULT_SAMPLING, seed: 41 };
  const oneByOne = asLists(frames(sampling, 64, 6));
  const lane = model.newLane(sampling);
  const neighbour = model.newLane({ ...DEFAULT_SAMPLING, seed: 42 });
  model.prefill(lane, prompt, 0, prompt.tokens.length);
  model.prefill(neighbour, prompt, 0, prompt.tokens.length);
  // Two steps queued before either is read back, the neighbour only in the second, then two more.
  const first = model.enqueueStep([lane]);
  const second = model.enqueueStep([neighbour, lane]);
  const drawn = [model.collectStep(first)[0]!, model.collectStep(second)[1]!];
  assert.throws(() => model.collectStep(first), { code: 'STEP_COLLECTED' });
  assert.throws(() => model.snapshot(lane), { code: 'SNAPSHOT_AFTER_FRAMES' });
  assert.throws(() => model.enqueueStep([lane, lane]), { code: 'STEP_LANE_REPEATED' });
  const third = model.enqueueStep([lane]);
  const fourth = model.enqueueStep([lane]);
  drawn.push(model.collectStep(third)[0]!, model.collectStep(fourth)[0]!);
  drawn.push(...model.step([lane]), ...model.step([lane]));
  model.release(lane);
  model.release(neighbour);
  assert.deepEqual(
    drawn.map((outcome) => (outcome.end ? 'end' : Array.from(outcome.frame))),
    oneByOne,
  );
});
