// The checkpoint runtime's text and codec halves, wired to the engine: a folder with the real tokenizer files and a
// tiny synthetic codec, and the null model in place of the speech model. Prompts come from the real builder, audio
// from the real streamed codec decode. The model is handed on as soon as it is loaded, so that the lanes are planned
// while the codec still loads, and not after another load has failed.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { writeTorchCheckpoint } from '../../src/checkpoint/torch-pth.ts';
import { codecConfigToJson, TINY_CODEC_CONFIG } from '../../src/codec/config.ts';
import { encodeReferenceAudio, loadCheckpointCodec } from '../../src/codec/reference.ts';
import { synthesizeCodecWeights } from '../../src/codec/synth-weights.ts';
import { loadCheckpointRuntime, loadCpuEngineCodec } from '../../src/engine/checkpoint-runtime.ts';
import { DEFAULT_ENGINE_SETTINGS, EngineCore } from '../../src/engine/engine-core.ts';
import { type LanePlan, planLanes } from '../../src/engine/lane-plan.ts';
import { NullSpeechModel } from '../../src/engine/null-model.ts';
import type { EngineEvent, SpeechJob } from '../../src/engine/protocol.ts';
import type { SpeechRuntime } from '../../src/engine/runtime.ts';
import { DramaError, isDramaError } from '../../src/errors.ts';
import type { SpeechModel } from '../../src/model/types.ts';
import { buildSyntheticTokenizerFiles } from '../../src/text/vocabulary.ts';
import { job, recordingModel } from './support.ts';

let folder: string;
let runtime: SpeechRuntime;
before(async () => {
  folder = await mkdtemp(join(tmpdir(), 'drama3-runtime-'));
  const tokenizer = buildSyntheticTokenizerFiles();
  await writeFile(join(folder, 'tokenizer.json'), tokenizer.tokenizerJson);
  await writeFile(join(folder, 'tokenizer_config.json'), tokenizer.tokenizerConfigJson);
  await writeFile(join(folder, 'config.json'), JSON.stringify({ codec_config: codecConfigToJson(TINY_CODEC_CONFIG) }));
  await writeTorchCheckpoint(join(folder, 'codec.pth'), synthesizeCodecWeights(TINY_CODEC_CONFIG, 0));
  runtime = await loadCheckpointRuntime(folder, 64, async () =>
    Object.assign(new NullSpeechModel({ contextRows: 8192, framesPerRow: 0.25 }), {
      unknownKeys: ['text_config.extra_key'],
      defaulted: ['tower_config'],
    }),
  );
});

test('the runtime names the tokenizer in use, how long each part took to load, and the config keys it ignored or defaulted', () => {
  assert.match(runtime.notices![0]!, /^tokenizer: /);
  assert.match(
    runtime.notices![1]!,
    /^loaded together: the model in \d+\.\d s, the codec in \d+\.\d s, the tokenizer in \d+\.\d s$/,
  );
  assert.ok(runtime.notices!.some((notice) => notice.includes('text_config.extra_key')));
  assert.ok(runtime.notices!.some((notice) => notice.includes('tower_config')));
});
after(() => rm(folder, { recursive: true, force: true }));

function run(
  text: string,
  seed = 1,
  references: SpeechJob['references'] = [],
  pieceLength: number | undefined = undefined,
  settings = DEFAULT_ENGINE_SETTINGS,
): Promise<EngineEvent[]> {
  return new Promise((resolve) => {
    const events: EngineEvent[] = [];
    const core = new EngineCore(runtime, settings, (event) => {
      if (event.type === 'stats') return;
      events.push(event);
      if (event.type === 'finished' || event.type === 'failed') resolve(events);
    });
    core.handle({
      type: 'submit',
      id: 1,
      job: job(text, { sampling: { ...job('').sampling, seed }, references, pieceLength }),
    });
  });
}

function audioOf(events: EngineEvent[]): Float32Array[] {
  return events.flatMap((event) => (event.type === 'audio' ? [event.pcm] : []));
}

test('the real prompt builder and codec serve a request: input tokens, frames, finite samples', async () => {
  const events = await run('Hello there, how are you today?');
  const admitted = events.find((event) => event.type === 'admitted');
  const finished = events.at(-1);
  assert.ok(admitted?.type === 'admitted' && admitted.admission.inputTokens > 3);
  assert.ok(finished?.type === 'finished');
  const samples = audioOf(events).reduce((sum, pcm) => sum + pcm.length, 0);
  assert.equal(samples, finished.usage.outputFrames * 2048);
  assert.ok(audioOf(events).every((pcm) => pcm.every(Number.isFinite)));
});

test('same seed, same audio through the real codec; structural tokens refused by the real builder', async () => {
  const first = audioOf(await run('Same words twice.', 9));
  const second = audioOf(await run('Same words twice.', 9));
  assert.deepEqual(second, first);
  const refused = (await run('no <|im_end|> here')).at(-1);
  assert.equal(refused?.type, 'failed');
  if (refused?.type === 'failed') assert.match(refused.error.code, /STRUCTURAL/);
});

test('an encoded reference (a tone at 22.05 kHz through the real codec) is placed in the prompt', async () => {
  const tone = Float32Array.from({ length: 11025 }, (_, index) => 0.3 * Math.sin((2 * Math.PI * 220 * index) / 22050));
  const frames = encodeReferenceAudio(await loadCheckpointCodec(folder), [tone], 22050);
  const plain = (await run('Speak like the reference.')).find((event) => event.type === 'admitted');
  const events = await run('Speak like the reference.', 1, [{ text: 'a tone', frames }]);
  const admitted = events.find((event) => event.type === 'admitted');
  assert.ok(plain?.type === 'admitted' && admitted?.type === 'admitted');
  // 0.5 s at 44.1 kHz is ceil(22050 / 2048) = 11 code rows, plus the transcript and the reference bracket.
  assert.ok(admitted.admission.promptRows >= plain.admission.promptRows + frames.length);
  assert.ok(frames.length >= 10);
  assert.equal(events.at(-1)?.type, 'finished');
});

test('long text is split at sentence ends by the text module and spoken piece by piece as one request', async () => {
  const text = 'The first sentence is here. A second one follows it. And a third closes the paragraph.';
  const events = await run(text, 5, [], 40);
  const admitted = events.find((event) => event.type === 'admitted');
  assert.ok(admitted?.type === 'admitted');
  assert.equal(admitted.admission.pieces, 3);
  const finished = events.at(-1);
  assert.ok(finished?.type === 'finished');
  const samples = audioOf(events).reduce((sum, pcm) => sum + pcm.length, 0);
  assert.equal(samples, finished.usage.outputFrames * 2048);
});

test('an engine whose input limit is raised admits one piece that long: the prompt builder takes its limits', async () => {
  const text = 'one two three four five six seven eight nine ten. '.repeat(120).trim();
  assert.ok(text.length > 4096 && text.length < 8000);
  const settings = { ...DEFAULT_ENGINE_SETTINGS, maxInputCodePoints: 8000, maxFrames: 4 };
  const events = await run(text, 3, [], 8000, settings);
  const admitted = events.find((event) => event.type === 'admitted');
  assert.ok(admitted?.type === 'admitted', JSON.stringify(events.at(-1)));
  assert.equal(admitted.admission.pieces, 1);
  assert.ok(admitted.admission.inputTokens > 1000);
  assert.equal(events.at(-1)?.type, 'finished');
  // The default engine refuses the same text by its input limit, naming the quantity.
  const refused = (await run(text, 3, [], 8000)).at(-1);
  assert.ok(refused?.type === 'failed' && /code points/.test(refused.error.message), JSON.stringify(refused));
});

/** Resolves once `done` holds, or after `limitMs` (the assertions that follow then say what did not happen). */
async function until(done: () => boolean, limitMs = 5000): Promise<void> {
  const started = performance.now();
  while (!done() && performance.now() - started < limitMs) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** A promise the test settles when it chooses. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

const codecMissing = () => new DramaError('CODEC_NOT_FOUND', 'the codec is gone', { kind: 'not_found' });
const isCodecMissing = (error: unknown) => isDramaError(error) && error.code === 'CODEC_NOT_FOUND';

test('the lanes are planned as soon as the model is loaded, while the codec is still loading', async () => {
  const settings = { ...DEFAULT_ENGINE_SETTINGS, lanes: 3 };
  const { model, planned } = recordingModel();
  const codecHeld = gate();
  let codecLoaded = false;
  let early: LanePlan | undefined;
  const loading = loadCheckpointRuntime(folder, 64, async () => model, {
    loadCodec: async (dir) => {
      const codec = await loadCpuEngineCodec(dir);
      await codecHeld.promise;
      codecLoaded = true;
      return codec;
    },
    onModel: (loaded) => {
      early = planLanes(loaded, undefined, settings);
    },
  });
  const settled = loading.then(
    () => true,
    () => true,
  );
  await Promise.race([settled, until(() => planned.length > 0)]);
  assert.deepEqual(planned, [{ lanes: 3, rowsPerLane: 8192 }], 'the lanes are planned while the codec loads');
  assert.equal(codecLoaded, false);
  codecHeld.open();
  const loaded = await loading;
  const core = new EngineCore(loaded, settings, () => {}, undefined, early);
  assert.equal(planned.length, 1, 'the engine does not plan them again');
  assert.match(core.info.notices.at(-1) ?? '', /^lanes planned: 3 of 8192 rows in \d+\.\d s$/);
  assert.ok(core.info.notices.some((notice) => notice.startsWith('loaded together: the model in ')));
  core.handle({ type: 'shutdown' });
});

test('a load that fails after the model was handed on fails the runtime with its own error', async () => {
  const handed: SpeechModel[] = [];
  const loading = loadCheckpointRuntime(folder, 64, async () => new NullSpeechModel(), {
    loadCodec: async () => {
      await until(() => handed.length > 0);
      throw codecMissing();
    },
    onModel: (loaded) => handed.push(loaded),
  });
  await assert.rejects(loading, isCodecMissing);
  assert.equal(handed.length, 1);
});

test('a model that arrives after another load failed is not handed on', async () => {
  const codecFailed = gate();
  const modelReturned = gate();
  const handed: SpeechModel[] = [];
  const loadModel = async () => {
    await codecFailed.promise;
    modelReturned.open();
    return new NullSpeechModel();
  };
  const loading = loadCheckpointRuntime(folder, 64, loadModel, {
    loadCodec: async () => {
      codecFailed.open();
      throw codecMissing();
    },
    onModel: (loaded) => handed.push(loaded),
  });
  await assert.rejects(loading, isCodecMissing);
  await modelReturned.promise;
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(handed, []);
});
