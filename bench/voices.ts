// Reference cache benchmark: time to first audio (TTFA) and prompt rows prefilled for a request with a reference
// voice, served with the cache off, as a miss (first use of the voice) and as a hit (the voice again), on the
// embedded tiny checkpoint (or --model DIR) on the cpu, engine in-thread. Each round uses a new transcript so that its
// first request is a genuine miss. Prints one table; `--json FILE` also writes the rows as JSON.
// Usage: npx tsx bench/voices.ts [--model DIR] [--seconds S] [--rounds N] [--frames N] [--prefill-chunk N] [--json FILE]
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { writeWav } from '../src/audio/wav.ts';
import { DEFAULT_CACHE_DIR, resolveRuntime } from '../src/cli/default-model.ts';
import { Engine } from '../src/engine/engine.ts';
import { DEFAULT_ENGINE_SETTINGS } from '../src/engine/engine-core.ts';
import type { SpeechJob } from '../src/engine/protocol.ts';
import { DEFAULT_SAMPLING, type Frame } from '../src/model/types.ts';
import { voiceEncoderFor } from '../src/voices/encoder.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    seconds: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '3' },
    frames: { type: 'string', default: '4' },
    'prefill-chunk': { type: 'string', default: String(DEFAULT_ENGINE_SETTINGS.prefillChunk) },
    json: { type: 'string' },
  },
});
const rounds = Number(values.rounds);
const prefillChunk = Number(values['prefill-chunk']);
const spec = await resolveRuntime({ model: values.model, cacheDir: DEFAULT_CACHE_DIR, prefillChunk });

/** A 16-bit mono WAV of a gliding tone, the reference recording. */
function referenceWav(seconds: number, sampleRate = 24000): Uint8Array {
  const samples = Float32Array.from({ length: Math.round(seconds * sampleRate) }, (_, index) => {
    const time = index / sampleRate;
    return 0.275 * Math.sin(2 * Math.PI * (150 + 40 * time) * time);
  });
  return writeWav(samples, sampleRate);
}

const encoder = voiceEncoderFor(spec);
const encoded = await encoder.encode(referenceWav(Number(values.seconds)), 'A gliding tone.');
await encoder.close();

function start(referenceCacheBytes: number): Promise<Engine> {
  return Engine.start({
    runtime: spec,
    settings: { ...DEFAULT_ENGINE_SETTINGS, lanes: 1, prefillChunk, referenceCacheBytes },
    queueLimit: 4,
    thread: 'inline',
  });
}

interface Sample {
  readonly firstAudioMs: number;
  readonly promptRows: number;
  readonly prefilledRows: number;
}

/** One request to its end: TTFA and the rows it prefilled (prompt rows minus the rows a hit restored). */
function measure(engine: Engine, transcript: string, frames: readonly Frame[]): Promise<Sample> {
  const saved = engine.stats.referenceCache?.rowsSaved ?? 0;
  const job: SpeechJob = {
    text: 'The reference cache lets a known voice start speaking sooner.',
    instructions: undefined,
    references: [{ text: transcript, frames, voice: 'bench' }],
    sampling: { ...DEFAULT_SAMPLING, seed: 1 },
    maxFrames: Number(values.frames),
    normalize: true,
    pieceLength: undefined,
  };
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let firstAudioMs = 0;
    let promptRows = 0;
    engine.submit(job, (event) => {
      if (event.type === 'admitted') promptRows = event.admission.promptRows;
      else if (event.type === 'audio' && firstAudioMs === 0) firstAudioMs = performance.now() - started;
      else if (event.type === 'failed') reject(new Error(event.error.message));
      else if (event.type === 'finished') {
        const restored = (engine.stats.referenceCache?.rowsSaved ?? 0) - saved;
        resolve({ firstAudioMs, promptRows, prefilledRows: promptRows - restored });
      }
    });
  });
}

const off = await start(0);
const on = await start(DEFAULT_ENGINE_SETTINGS.referenceCacheBytes ?? 256 * 1024 * 1024);
// One request on each engine first, so that no row pays for start-up and compilation.
await measure(off, 'A warm-up reference.', encoded.frames);
await measure(on, 'A warm-up reference.', encoded.frames);
const samples: Record<'cache off' | 'miss' | 'hit', Sample[]> = { 'cache off': [], miss: [], hit: [] };
for (let round = 0; round < rounds; round++) {
  const transcript = `Round ${round + 1}: this reference recording says a few words for the benchmark.`;
  samples['cache off'].push(await measure(off, transcript, encoded.frames));
  samples.miss.push(await measure(on, transcript, encoded.frames));
  samples.hit.push(await measure(on, transcript, encoded.frames));
}
await Promise.all([off.close(), on.close()]);

const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
const rows = Object.entries(samples).map(([kind, list]) => ({
  kind,
  requests: list.length,
  ttfaMedianMs: Number(median(list.map((sample) => sample.firstAudioMs)).toFixed(1)),
  promptRows: list[0]!.promptRows,
  prefilledRows: median(list.map((sample) => sample.prefilledRows)),
}));
console.log(
  `reference: ${encoded.frames.length} frames (${values.seconds} s); prefill chunk ${prefillChunk}; ${values.frames} frames a request; model ${spec.kind === 'checkpoint' ? spec.dir : spec.kind}`,
);
console.table(rows);
if (values.json !== undefined) {
  await writeFile(values.json, `${JSON.stringify({ referenceFrames: encoded.frames.length, rows }, null, 2)}\n`);
}
