// Contracts 1–3 bit for bit on the CUDA backend with the `small` synthetic checkpoint (the real head dimensions; the
// `tiny` preset's head dims of 16 are below what the attention and DeltaNet kernels serve): (1) the same request
// twice in one process, and in a fresh process (this file run again as a child with DRAMA3_SPEECH_FRAMES_CHILD set,
// which prints its frames as JSON), gives equal frames; (2) prefill in chunks of 1, 7, 64, 256 and the whole prompt
// gives equal frames; (3) each of 16 requests alone and batched with neighbours at other positions in batches of
// 1, 2, 4 and 8 lanes, 8 of them prefilled together (several lanes a prefill call), and 8 stepped with each step
// queued before the one before it is read back, gives equal frames; then 64 requests alone and in batches of 16, 32
// and 64 after re-planning for 64 lanes (the buckets past 8, whose projections of 17 to 64 rows take other tiles).
// A failure prints the first mismatch (frame, column, both values). The cpu controls (tiny, no GPU needed) show each
// check fails on a planted fault. Skips the GPU tests, saying why, without CUDA.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { CpuBackend } from '../../src/backend/cpu/backend.ts';
import { CudaBackend } from '../../src/backend/cuda/backend.ts';
import { CudaContext } from '../../src/backend/cuda/context.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import type { CudaBuffer } from '../../src/backend/cuda/tensors.ts';
import type { Backend } from '../../src/backend/types.ts';
import { loadSpeechModel } from '../../src/model/load-model.ts';
import type { SlotSpeechModel } from '../../src/model/speech-model.ts';
import { CHECKPOINT_ENVIRONMENT, speechCheckpointDir } from './support/speech-model-checkpoint.ts';
import {
  batchingMismatches,
  chunkingMismatches,
  jointPrefillMismatches,
  repeatMismatches,
} from './support/speech-model-contracts.ts';
import {
  contractRequests,
  type Drawn,
  firstDrawnMismatch,
  framesAlone,
  framesQueuedAhead,
} from './support/speech-model-frames.ts';
import { PlantedCpuBackend } from './support/speech-model-planted.ts';

const CHILD_ENVIRONMENT = 'DRAMA3_SPEECH_FRAMES_CHILD';
const FRAMES_LINE = 'SPEECH_FRAMES_JSON ';
const LANES = 8;
/** Contract 3 again after re-planning for the largest batch bucket, in the buckets past BATCH_SIZES. */
const WIDE_LANES = 64;
const WIDE_BATCH_SIZES = [16, 32, 64];
const ROWS_PER_LANE = 1024;
/** The model's own cap on a prefill call is above the longest prompt, so that one chunk is the whole prompt. */
const SIZES = {
  cuda: { prefillChunk: 512, longPrompt: 300, frames: 8 },
  // The cpu controls run the tiny checkpoint in every test run: small prompts, few frames.
  cpu: { prefillChunk: 96, longPrompt: 80, frames: 4 },
};
const REQUESTS = 16;
const LONGEST = 200;
const CHUNK = 64;
const CHUNKINGS = [1, 7, 64, 256];
const BATCH_SIZES = [1, 2, 4, 8];

/** The request contracts 1 and 2 use (on CUDA past one 256-row chunk). */
function longRequest(semanticBegin: number, kind: keyof typeof SIZES) {
  return contractRequests(semanticBegin, 1, SIZES[kind].longPrompt)[0]!;
}

/** The model on `backend`: the tiny checkpoint on the cpu, the small one on CUDA. */
async function loadOn<B>(backend: Backend<B>, lanes: number): Promise<SlotSpeechModel<B>> {
  const cpu = backend instanceof CpuBackend;
  const dir = await speechCheckpointDir(cpu ? 'tiny' : 'small');
  const prefillChunk = SIZES[cpu ? 'cpu' : 'cuda'].prefillChunk;
  return loadSpeechModel(dir, backend, { prefillChunk, capacity: { lanes, rowsPerLane: ROWS_PER_LANE } });
}

/** The child's part: one request's frames on a fresh model, printed as one JSON line. */
async function printFrames(kind: keyof typeof SIZES): Promise<void> {
  const cuda = kind === 'cuda' ? new CudaContext() : undefined;
  try {
    const model = await (cuda === undefined
      ? loadOn(new CpuBackend({ precision: 'bf16' }), 1)
      : loadOn(new CudaBackend(cuda), 1));
    const frames = framesAlone(model, longRequest(model.candidates.semanticBegin, kind), SIZES[kind].frames, CHUNK);
    console.log(`${FRAMES_LINE}${JSON.stringify(frames)}`);
  } finally {
    cuda?.close();
  }
}

/** Runs this file again as a fresh process on `kind` over the same checkpoint and returns the frames it printed. */
async function framesFromFreshProcess(kind: keyof typeof SIZES): Promise<Drawn> {
  const env: NodeJS.ProcessEnv = { ...process.env, [CHILD_ENVIRONMENT]: kind };
  env[CHECKPOINT_ENVIRONMENT] = await speechCheckpointDir(kind === 'cuda' ? 'small' : 'tiny');
  // The test runner marks its children; this one is a plain program.
  delete env.NODE_TEST_CONTEXT;
  const flags = process.execArgv.filter((flag) => !flag.startsWith('--test'));
  const child = spawnSync(process.execPath, [...flags, process.argv[1]!], { env, encoding: 'utf8', timeout: 300_000 });
  const line = (child.stdout ?? '').split('\n').find((text) => text.startsWith(FRAMES_LINE));
  const why = child.error?.message ?? `status ${child.status}`;
  assert.ok(line !== undefined, `the fresh process printed no frames (${why}):\n${child.stderr}`);
  return JSON.parse(line.slice(FRAMES_LINE.length)) as Drawn;
}

function registerTests(): void {
  test('control: cpu tiny on a fresh process gives the frames of this one', async () => {
    const model = await loadOn(new CpuBackend({ precision: 'bf16' }), 1);
    const here = framesAlone(model, longRequest(model.candidates.semanticBegin, 'cpu'), SIZES.cpu.frames, CHUNK);
    const mismatch = firstDrawnMismatch(here, await framesFromFreshProcess('cpu'));
    assert.equal(mismatch, undefined, `fresh cpu process against this one: ${mismatch}`);
  });

  test('control: each contract check catches its planted fault on cpu tiny', async () => {
    const backend = new PlantedCpuBackend({ precision: 'bf16' });
    const model = await loadOn(backend, 4);
    const requests = contractRequests(model.candidates.semanticBegin, 4, 40);
    const request = longRequest(model.candidates.semanticBegin, 'cpu');
    const frames = SIZES.cpu.frames;
    assert.deepEqual(repeatMismatches(model, request, frames, CHUNK), [], 'the unplanted backend repeats');
    assert.deepEqual(chunkingMismatches(model, request, frames, [7, 64]), [], 'the unplanted backend chunks');
    assert.deepEqual(batchingMismatches(model, requests, [2, 4], frames, CHUNK).mismatches, []);
    backend.normFault = 'random';
    const repeat = repeatMismatches(model, request, frames, CHUNK);
    backend.normFault = 'row-count';
    const chunking = chunkingMismatches(model, request, frames, [1, 7]);
    const batching = batchingMismatches(model, requests, [2, 4], frames, CHUNK).mismatches;
    backend.normFault = 'none';
    const alone = requests.map((request) => framesAlone(model, request, frames, CHUNK));
    assert.deepEqual(
      jointPrefillMismatches(model, requests, alone, frames),
      [],
      'the unplanted backend prefills jointly',
    );
    backend.normFault = 'row-count';
    const joint = jointPrefillMismatches(model, requests, alone, frames);
    for (const line of [...repeat, ...chunking, ...batching.slice(0, 4), ...joint.slice(0, 2)])
      console.log(`CAUGHT ${line}`);
    assert.notDeepEqual(repeat, [], 'a norm that flips a sign at random passed the repeat check');
    assert.notDeepEqual(chunking, [], 'a row-count dependent norm passed the chunking check');
    assert.notDeepEqual(batching, [], 'a row-count dependent norm passed the batching check');
    assert.notDeepEqual(joint, [], 'a row-count dependent norm passed the joint prefill check');
  });

  test('control: a batch started together catches a fault of calls past 16 rows on cpu tiny', async () => {
    const backend = new PlantedCpuBackend({ precision: 'bf16' });
    const model = await loadOn(backend, 4);
    model.plan({ lanes: 32, rowsPerLane: ROWS_PER_LANE });
    const requests = contractRequests(model.candidates.semanticBegin, 32, 40);
    const frames = SIZES.cpu.frames;
    // Chunks of 8 rows: the prefill never reaches the fault, so only steps of more than 16 lanes can.
    assert.deepEqual(batchingMismatches(model, requests, [32], frames, 8, 0).mismatches, [], 'unplanted');
    backend.normFault = 'past-16-rows';
    const together = batchingMismatches(model, requests, [32], frames, 8, 0).mismatches;
    const staggered = batchingMismatches(model, requests, [32], frames, 8).mismatches;
    backend.normFault = 'none';
    for (const line of together.slice(0, 2)) console.log(`CAUGHT ${line}`);
    console.log(
      `the same 32 lanes joining 2 rounds apart (at most ${frames / 2 + 1} a step): ${staggered.length} differ`,
    );
    assert.notDeepEqual(together, [], 'a fault of calls past 16 rows passed a batch of 32 started together');
  });

  const availability = cudaAvailability();
  const skip = availability.available ? false : `no CUDA device: ${availability.reason}`;
  const FRAMES = SIZES.cuda.frames;
  let cuda: CudaContext | undefined;
  let model: SlotSpeechModel<CudaBuffer>;

  before(async () => {
    if (skip) return;
    cuda = new CudaContext();
    model = await loadOn(new CudaBackend(cuda), LANES);
    console.log(`speech-model contracts on ${cuda.properties.name}`);
  });
  after(() => cuda?.close());

  test('small on cuda: (1) the same request twice, and in a fresh process, gives equal frames', { skip }, async () => {
    const request = longRequest(model.candidates.semanticBegin, 'cuda');
    const mismatches = repeatMismatches(model, request, FRAMES, CHUNK);
    const here = framesAlone(model, request, FRAMES, CHUNK);
    const fresh = firstDrawnMismatch(here, await framesFromFreshProcess('cuda'));
    if (fresh !== undefined) mismatches.push(`fresh process against this one: ${fresh}`);
    console.log(`contract 1: ${here.length} frames, first [${here[0]?.join(',')}]`);
    assert.deepEqual(mismatches, []);
  });

  test(`small on cuda: (2) prefill in chunks of ${CHUNKINGS.join(', ')} gives the frames of one chunk`, {
    skip,
  }, () => {
    const request = longRequest(model.candidates.semanticBegin, 'cuda');
    console.log(`contract 2: a prompt of ${request.rows.tokens.length} rows`);
    assert.deepEqual(chunkingMismatches(model, request, FRAMES, CHUNKINGS), []);
  });

  test(`small on cuda: (3) ${REQUESTS} requests alone and in batches of ${BATCH_SIZES.join(', ')}`, { skip }, () => {
    const requests = contractRequests(model.candidates.semanticBegin, REQUESTS, LONGEST);
    const { expected, mismatches } = batchingMismatches(model, requests, BATCH_SIZES, FRAMES, CHUNK);
    assert.ok(
      expected.every((frames) => frames.length > 0),
      'a request drew no frame',
    );
    assert.notDeepEqual(expected[0], expected[1], 'two requests drew the same frames: the comparison is empty');
    assert.deepEqual(mismatches, []);
    // The first LANES requests prefilled together: their rows in shared calls, cut where a call fills up.
    const joint = jointPrefillMismatches(model, requests.slice(0, LANES), expected.slice(0, LANES), FRAMES);
    console.log(`contract 3: ${LANES} requests prefilled together, ${joint.length} differ from alone`);
    assert.deepEqual(joint, []);
    // The same lanes stepped with each step queued before the one before it is read back (look-ahead).
    const ahead = framesQueuedAhead(model, requests.slice(0, LANES), FRAMES, CHUNK);
    const queued = ahead.flatMap((drawn, index) => {
      const mismatch = firstDrawnMismatch(expected[index]!, drawn);
      return mismatch === undefined ? [] : [`request ${index} with steps queued ahead: ${mismatch}`];
    });
    console.log(`contract 3: ${LANES} requests with steps queued ahead, ${queued.length} differ from alone`);
    assert.deepEqual(queued, []);
  });

  test(`small on cuda: (3) re-planned for ${WIDE_LANES} lanes, ${WIDE_LANES} requests alone and in batches of ${WIDE_BATCH_SIZES.join(', ')}`, {
    skip,
  }, () => {
    model.plan({ lanes: WIDE_LANES, rowsPerLane: ROWS_PER_LANE });
    const requests = contractRequests(model.candidates.semanticBegin, WIDE_LANES, LONGEST);
    // The whole group starts together, so every step of its first frames has as many rows as the batch.
    const { mismatches } = batchingMismatches(model, requests, WIDE_BATCH_SIZES, FRAMES, CHUNK, 0);
    console.log(
      `contract 3: ${WIDE_LANES} requests in batches of ${WIDE_BATCH_SIZES.join(', ')}, ${mismatches.length} lanes differ from alone`,
    );
    assert.deepEqual(mismatches, []);
  });
}

const child = process.env[CHILD_ENVIRONMENT];
if (child === undefined || child === '') registerTests();
else await printFrames(child === 'cuda' ? 'cuda' : 'cpu');
