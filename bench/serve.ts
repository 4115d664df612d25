// Server benchmark: time to first audio (p50/p95) and real-time factor at 1, 4 and 16 concurrent clients, each
// streaming pcm from /v1/audio/speech over a socket. The engine runs in its worker thread as in `drama3 serve`.
// Usage: tsx bench/serve.ts [--model DIR | --null-model] [--lanes N] [--requests N] [--frames N] [--out FILE.json]
// Each concurrency level serves max(--requests, clients) requests of exactly --frames frames.
// With neither --model nor --null-model it uses the embedded tiny checkpoint (created on first use).
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { DEFAULT_CACHE_DIR, resolveRuntime } from '../src/cli/default-model.ts';
import { Engine } from '../src/engine/engine.ts';
import { DEFAULT_ENGINE_SETTINGS } from '../src/engine/engine-core.ts';
import { buildApp } from '../src/server/app.ts';
import { audioToolkit } from '../src/server/audio-toolkit.ts';
import { percentile, type SpeechSample, streamSpeech } from './support/speech-client.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    'null-model': { type: 'boolean', default: false },
    lanes: { type: 'string', default: '16' },
    requests: { type: 'string', default: '16' },
    frames: { type: 'string', default: '32' },
    out: { type: 'string' },
  },
});
const lanes = Number(values.lanes);
const requestsPerLevel = Number(values.requests);
const frames = Number(values.frames);

const TEXTS = [
  'The quick brown fox jumps over the lazy dog.',
  'A journey of a thousand miles begins with a single step.',
  'She sells sea shells by the sea shore, or so they say.',
  'Every morning the market opens before the sun is up.',
];

function speak(url: string, index: number): Promise<SpeechSample> {
  return streamSpeech(url, { input: TEXTS[index % TEXTS.length], seed: index, max_frames: frames });
}

const runtime = await resolveRuntime({
  model: values.model,
  nullModel: values['null-model'],
  cacheDir: process.env.DRAMA3_CACHE_DIR ?? DEFAULT_CACHE_DIR,
  prefillChunk: DEFAULT_ENGINE_SETTINGS.prefillChunk,
});
const engine = await Engine.start({
  runtime,
  settings: { ...DEFAULT_ENGINE_SETTINGS, lanes },
  queueLimit: 1024,
  thread: 'worker',
});
const app = await buildApp({ engine, audio: audioToolkit });
const url = await app.listen({ host: '127.0.0.1', port: 0 });
await speak(url, 0);

const rows = [];
for (const clients of [1, 4, 16]) {
  const samples: SpeechSample[] = [];
  const started = performance.now();
  const requests = Math.max(requestsPerLevel, clients);
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < requests) samples.push(await speak(url, next++));
    }),
  );
  const wallSeconds = (performance.now() - started) / 1000;
  const ttfa = samples.map((sample) => sample.firstAudioMs).sort((a, b) => a - b);
  const audioSeconds = samples.reduce((sum, sample) => sum + sample.audioSeconds, 0);
  const perRequestRtf = samples.map((sample) => sample.totalMs / 1000 / sample.audioSeconds).sort((a, b) => a - b);
  rows.push({
    clients,
    requests: samples.length,
    ttfaP50Ms: percentile(ttfa, 0.5),
    ttfaP95Ms: percentile(ttfa, 0.95),
    rtfP50: percentile(perRequestRtf, 0.5),
    audioSecondsPerSecond: audioSeconds / wallSeconds,
  });
}
await app.close();

console.log(
  `drama3 serve benchmark: model ${engine.info.modelId}${engine.info.synthetic ? ' (synthetic)' : ''}, lanes ${lanes}, ${frames} frames a request`,
);
console.log('| clients | requests | TTFA p50 (ms) | TTFA p95 (ms) | RTF p50 (wall / audio) | audio s per s |');
console.log('|---|---|---|---|---|---|');
for (const row of rows) {
  console.log(
    `| ${row.clients} | ${row.requests} | ${row.ttfaP50Ms.toFixed(1)} | ${row.ttfaP95Ms.toFixed(1)} | ${row.rtfP50.toFixed(3)} | ${row.audioSecondsPerSecond.toFixed(2)} |`,
  );
}
if (values.out !== undefined) {
  await writeFile(values.out, `${JSON.stringify({ model: engine.info.modelId, lanes, frames, rows }, null, 2)}\n`);
}
