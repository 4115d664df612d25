// The server end to end on the GPU, as `drama3 serve` runs it (the engine and the decode on their threads, the voice
// encoder on its own, the model and the codec on CUDA): a synthetic checkpoint written in the real format to local
// disk and loaded (load time and the engine's own load notices), then over HTTP with streamed 44.1 kHz pcm:
//   time to first audio, one client, p50/p95 of --requests requests: a short text with the default voice, with a
//   catalog voice (uploaded once, so its reference prefix is cached after the first request), and with a fresh
//   one-off 20 s reference each request (encoded on CUDA, its prefix prefilled, never cached); and where it goes,
//   from the server's request trace (body read, handler, engine admission, the engine's first audio event);
//   aggregate frames/s and real-time factor at 1, 8, 32 and 64 concurrent clients (--frames frames a request, the
//   slowest stream's real-time factor beside the median), and whether every reply is byte-identical to the same
//   request served alone (contract 3 over HTTP: request i has seed i in every round), with where each round's wall
//   time went from the engine's round times (rounds that prefilled, rounds that only stepped, time outside rounds),
//   and where the slowest stream's time went, from the server's trace of that request;
//   the device ledger at the end (/v1/models: plan allocates up front, so this is its peak but for the reference
//   cache's snapshots) and the process's peak resident memory;
//   on cuda, once the engine has closed: the copy bandwidth, and beside each client count's frames/s the roofline of
//   the frame step alone at that many lanes and the PyTorch baseline (support/serve-roofline.ts).
// One table per part, and gpu-serve.json in the output directory (argv[2]).
// Usage: tsx bench/gpu-serve.ts [output directory] [--preset small|full] [--requests N] [--frames N]
//        [--backend cuda|cpu] (cpu: a quick check of the bench itself on any machine, with the tiny preset)
//        [--compare all|served] (served: compare only the seeds the one-client round served, skipping the rest alone)
//        [--clients 1,8,32,64] (the client counts, in order; the first is the reference the others are compared to)
//        [--per-client N] (each client sends N requests in turn: N > 1 measures lanes that come and go, not one burst)
//        [--checkpoint DIR] (written there when DIR holds no checkpoint yet, and kept: a second run only loads it)
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { writeWav } from '../src/audio/wav.ts';
import { CudaContext } from '../src/backend/cuda/context.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import { openVoices } from '../src/cli/voices.ts';
import { Engine } from '../src/engine/engine.ts';
import { DEFAULT_ENGINE_SETTINGS } from '../src/engine/engine-core.ts';
import type { RuntimeSpec } from '../src/engine/load-runtime.ts';
import { NO_ROUND_TIME, type RoundTime } from '../src/engine/protocol.ts';
import { buildApp } from '../src/server/app.ts';
import { audioToolkit } from '../src/server/audio-toolkit.ts';
import type { SynthPreset } from '../src/synth/plan.ts';
import { synthesizeCheckpoint } from '../src/synth/synthesize.ts';
import { defaultSynthThreads } from '../src/synth/tensor-threads.ts';
import { PYTORCH_BASELINE } from './support/frames-report.ts';
import { markdownTable, writeReport } from './support/output.ts';
import { copyBandwidth } from './support/roofline.ts';
import { serveRoofline } from './support/serve-roofline.ts';
import { FIRST_AUDIO_STAGES, type FirstAudioStages, ServerTrace } from './support/server-trace.ts';
import { percentile, type SpeechSample, streamSpeech } from './support/speech-client.ts';

const { values } = parseArgs({
  allowPositionals: true,
  options: {
    preset: { type: 'string', default: 'small' },
    requests: { type: 'string', default: '20' },
    frames: { type: 'string', default: '64' },
    backend: { type: 'string', default: 'cuda' },
    compare: { type: 'string', default: 'all' },
    clients: { type: 'string' },
    'per-client': { type: 'string', default: '1' },
    checkpoint: { type: 'string' },
  },
});
const backend = values.backend === 'cpu' ? 'cpu' : 'cuda';
if (backend === 'cuda') {
  const availability = cudaAvailability();
  if (!availability.available) {
    console.log(`gpu-serve needs a CUDA device: ${availability.reason}`);
    process.exit(0);
  }
}
const preset = (backend === 'cpu' ? 'tiny' : values.preset) as SynthPreset;
const requests = Number(values.requests);
const frames = Number(values.frames);
const compareAll = values.compare !== 'served';
const CLIENTS = values.clients?.split(',').map(Number) ?? (backend === 'cpu' ? [1, 2] : [1, 8, 32, 64]);
const perClient = Number(values['per-client']);
if (
  !CLIENTS.every((count) => Number.isInteger(count) && count > 0) ||
  !(Number.isInteger(perClient) && perClient > 0)
) {
  console.error('--clients takes positive integers separated by commas, --per-client a positive integer');
  process.exit(2);
}
const SHORT_TEXT = 'Hello there, how are you today?';
const REFERENCE_SECONDS = 20;

/** A 16-bit mono WAV of a drifting tone with a little noise, different for each salt (so never a cache hit). */
function referenceWav(seconds: number, salt: number): Buffer {
  const rate = 24000;
  let state = 0x9e3779b9 ^ salt;
  const samples = Float32Array.from({ length: Math.round(seconds * rate) }, (_, index) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    const time = index / rate;
    return 0.3 * Math.sin(2 * Math.PI * (180 + 20 * salt + 15 * time) * time) + 0.02 * (state / 2 ** 32 - 0.5);
  });
  return Buffer.from(writeWav(samples, rate));
}

/** The engine's round times between two of its stats. */
function roundTimeBetween(before: RoundTime | undefined, after: RoundTime | undefined): RoundTime {
  const [from, to] = [before ?? NO_ROUND_TIME, after ?? NO_ROUND_TIME];
  return {
    prefillRounds: to.prefillRounds - from.prefillRounds,
    prefillRoundMs: to.prefillRoundMs - from.prefillRoundMs,
    prefillRows: to.prefillRows - from.prefillRows,
    stepRounds: to.stepRounds - from.stepRounds,
    stepRoundMs: to.stepRoundMs - from.stepRoundMs,
    laneSteps: to.laneSteps - from.laneSteps,
    stepCallMs: to.stepCallMs - from.stepCallMs,
    longestStepCallMs: to.longestStepCallMs,
    stepRecordings: to.stepRecordings - from.stepRecordings,
    directSteps: to.directSteps - from.directSteps,
    stepReplays: to.stepReplays - from.stepReplays,
    stepReplayMs: to.stepReplayMs - from.stepReplayMs,
    stepTablesMs: to.stepTablesMs - from.stepTablesMs,
    stepEnqueueMs: to.stepEnqueueMs - from.stepEnqueueMs,
    stepReadBackMs: to.stepReadBackMs - from.stepReadBackMs,
  };
}

/** The frame step's roofline beside the served frames/s, measured with the engine closed (its lanes hold the memory). */
async function printRoofline(dir: string, served: { clients: number; framesPerSecond: number }[]): Promise<void> {
  const cuda = new CudaContext();
  const bandwidth = copyBandwidth(cuda);
  cuda.close();
  // Lanes at half a request's frames: the short prompt's rows are few beside the recurrent state every lane holds.
  const rows = await serveRoofline(dir, served, Math.round(frames / 2), bandwidth);
  console.log(
    `\ncopy bandwidth ${bandwidth.gigabytesPerSecond.toFixed(0)} GB/s (the roofline's denominator, this run)`,
  );
  console.log(
    markdownTable(
      [
        'clients',
        'served frames/s',
        'the step alone: GB a step',
        'its roofline frames/s',
        'served of roofline',
        'PyTorch step frames/s',
      ],
      rows.map((row) => [
        String(row.clients),
        row.framesPerSecond.toFixed(1),
        (row.stepBytes / 1e9).toFixed(2),
        row.rooflineFramesPerSecond.toFixed(0),
        `${((100 * row.framesPerSecond) / row.rooflineFramesPerSecond).toFixed(1)}%`,
        row.pytorchFramesPerSecond === undefined ? '—' : row.pytorchFramesPerSecond.toFixed(1),
      ]),
    ).join('\n'),
  );
  console.log(`PyTorch: ${PYTORCH_BASELINE.measured}`);
  writeReport('gpu-serve-roofline.json', { bandwidth, position: Math.round(frames / 2), rows });
}

const serverTrace = new ServerTrace();
const parent = path.resolve('.');
const folder = fs.mkdtempSync(path.join(parent, '.gpu-serve-'));
let served: { clients: number; framesPerSecond: number }[] = [];
try {
  const dir = values.checkpoint === undefined ? path.join(folder, 'checkpoint') : path.resolve(values.checkpoint);
  const writeStarted = performance.now();
  const reused = values.checkpoint !== undefined && fs.existsSync(path.join(dir, 'config.json'));
  if (!reused) await synthesizeCheckpoint(dir, { preset, seed: 5, experts: 'fp8', threads: defaultSynthThreads() });
  const writeSeconds = (performance.now() - writeStarted) / 1000;
  // Flushed before the load, so that the load reads the disk rather than waiting on the write's writeback.
  const syncStarted = performance.now();
  for (const name of fs.readdirSync(dir)) {
    const descriptor = fs.openSync(path.join(dir, name), 'r');
    fs.fsyncSync(descriptor);
    fs.closeSync(descriptor);
  }
  const syncSeconds = (performance.now() - syncStarted) / 1000;
  console.log(
    reused
      ? `read the ${preset} checkpoint already written in ${dir} (page cache as the previous run left it)`
      : `wrote the ${preset} checkpoint to local disk in ${writeSeconds.toFixed(1)} s, flushed in ${syncSeconds.toFixed(1)} s`,
  );
  const runtime: RuntimeSpec = { kind: 'checkpoint', dir, backend, codecBackend: backend };
  const loadStarted = performance.now();
  const engine = await Engine.start({
    runtime,
    settings: { ...DEFAULT_ENGINE_SETTINGS, lanes: Math.max(...CLIENTS) },
    queueLimit: 4096,
    thread: 'worker',
  });
  const loadSeconds = (performance.now() - loadStarted) / 1000;
  console.log(`engine ready in ${loadSeconds.toFixed(1)} s; ${engine.info.notices.join('; ')}`);
  const voicesDir = path.join(folder, 'voices');
  fs.mkdirSync(voicesDir);
  const app = await buildApp({
    engine,
    audio: audioToolkit,
    trace: serverTrace.record,
    ...(await openVoices(voicesDir, runtime)),
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  try {
    const form = new FormData();
    form.append('name', 'bench-voice');
    form.append('text', 'This is the catalog voice the bench speaks with.');
    form.append('audio', new Blob([referenceWav(10, 0)], { type: 'audio/wav' }), 'voice.wav');
    const created = await fetch(`${url}/v1/audio/voices`, { method: 'POST', body: form });
    if (created.status !== 201) throw new Error(`voice upload: ${created.status} ${await created.text()}`);
    const firstAudio: { case: string; p50Ms: number; p95Ms: number; requests: number }[] = [];
    const firstAudioStages: ({ case: string } & FirstAudioStages)[] = [];
    const cases: [string, (index: number) => Record<string, unknown>][] = [
      ['short text, default voice', (index) => ({ input: SHORT_TEXT, seed: index, max_frames: 8 })],
      [
        'short text, cached catalog voice',
        (index) => ({ input: SHORT_TEXT, voice: 'bench-voice', seed: index, max_frames: 8 }),
      ],
      [
        `short text, uncached ${REFERENCE_SECONDS} s reference`,
        (index) => ({
          input: SHORT_TEXT,
          seed: index,
          max_frames: 8,
          references: [
            {
              audio: referenceWav(REFERENCE_SECONDS, index + 1).toString('base64'),
              text: 'A fresh reference each time.',
            },
          ],
        }),
      ],
    ];
    for (const [name, body] of cases) {
      await streamSpeech(url, body(requests));
      const samples: SpeechSample[] = [];
      const ids: string[] = [];
      for (let index = 0; index < requests; index++) {
        ids.push(`${firstAudio.length}-${index}`);
        samples.push(await streamSpeech(url, body(index), ids.at(-1)));
      }
      const sorted = samples.map((sample) => sample.firstAudioMs).sort((a, b) => a - b);
      firstAudio.push({ case: name, p50Ms: percentile(sorted, 0.5), p95Ms: percentile(sorted, 0.95), requests });
      firstAudioStages.push({ case: name, ...serverTrace.stages(ids, samples) });
    }
    const throughput: Record<string, number>[] = [];
    const slowest: ({ clients: number; request: string; rtf: number; totalMs: number } & FirstAudioStages)[] = [];
    const request = (index: number) => ({ input: SHORT_TEXT, seed: index, max_frames: frames });
    const rounds: Map<number, string>[] = [];
    for (const clients of CLIENTS) {
      const total = Math.max(requests, clients * perClient);
      const samples: SpeechSample[] = [];
      const sampleIds: string[] = [];
      const digests = new Map<number, string>();
      let next = 0;
      const roundsBefore = engine.stats.roundTime;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: clients }, async () => {
          while (next < total) {
            const index = next++;
            const id = `clients ${clients}, request ${index}`;
            const sample = await streamSpeech(url, request(index), id);
            samples.push(sample);
            sampleIds.push(id);
            digests.set(index, sample.digest);
          }
        }),
      );
      rounds.push(digests);
      const wallSeconds = (performance.now() - started) / 1000;
      const time = roundTimeBetween(roundsBefore, engine.stats.roundTime);
      const rtfOf = (sample: SpeechSample) => sample.totalMs / 1000 / sample.audioSeconds;
      const rtf = samples.map(rtfOf).sort((a, b) => a - b);
      // Where the slowest stream's time went, from the server's trace of that one request.
      const slowestAt = samples.reduce(
        (worst, sample, index) => (rtfOf(sample) > rtfOf(samples[worst]!) ? index : worst),
        0,
      );
      slowest.push({
        clients,
        request: sampleIds[slowestAt]!,
        rtf: rtfOf(samples[slowestAt]!),
        ...serverTrace.stages([sampleIds[slowestAt]!], [samples[slowestAt]!]),
        totalMs: samples[slowestAt]!.totalMs,
      });
      const audioSeconds = samples.reduce((sum, sample) => sum + sample.audioSeconds, 0);
      throughput.push({
        clients,
        requests: samples.length,
        framesPerSecond: (audioSeconds * 44100) / 2048 / wallSeconds,
        rtfP50: percentile(rtf, 0.5),
        rtfSlowest: rtf.at(-1)!,
        wallMs: wallSeconds * 1000,
        ...time,
        // The wall time no frame round covered: admission, the codec's last groups, the replies' ends.
        outsideRoundsMs: wallSeconds * 1000 - time.prefillRoundMs - time.stepRoundMs,
      });
    }
    // Contract 3 over HTTP: the replies of every round against the same requests served alone (the one-client
    // round, and with --compare all every other seed served alone afterwards).
    const alone = new Map(rounds[0]!);
    if (compareAll) {
      const largest = Math.max(...rounds.map((digests) => digests.size));
      for (let index = 0; index < largest; index++) {
        if (!alone.has(index)) alone.set(index, (await streamSpeech(url, request(index))).digest);
      }
    }
    rounds.forEach((digests, round) => {
      const compared = [...digests].filter(([index]) => alone.has(index));
      throughput[round]!.compared = round === 0 ? 0 : compared.length;
      throughput[round]!.identicalToAlone = compared.filter(([index, digest]) => alone.get(index) === digest).length;
    });
    // Plan allocates every lane's state up front, so what the ledger holds at the end is its peak but for the
    // reference cache's snapshots (within their budget).
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { speech: { memory: unknown } }[] };
    const memory = { lanes: models.data[0]?.speech.memory, peakRssBytes: process.resourceUsage().maxRSS * 1024 };
    console.log(`\n## drama3 serve on ${backend}, the ${preset} preset, load ${loadSeconds.toFixed(1)} s`);
    console.log(
      markdownTable(
        ['case (one client)', 'requests', 'first audio p50 ms', 'p95 ms'],
        firstAudio.map((row) => [row.case, String(row.requests), row.p50Ms.toFixed(1), row.p95Ms.toFixed(1)]),
      ).join('\n'),
    );
    console.log(
      markdownTable(
        ['case (one client), ms from arrival, p50', ...FIRST_AUDIO_STAGES.map(([, label]) => label)],
        firstAudioStages.map((row) => [row.case, ...FIRST_AUDIO_STAGES.map(([key]) => row[key].toFixed(1))]),
      ).join('\n'),
    );
    console.log(
      markdownTable(
        ['clients', 'requests', `frames/s (${frames} a request)`, 'RTF p50', 'RTF slowest', 'same bytes as alone'],
        throughput.map((row) => [
          String(row.clients),
          String(row.requests),
          row.framesPerSecond!.toFixed(1),
          row.rtfP50!.toFixed(3),
          row.rtfSlowest!.toFixed(3),
          row.compared === 0 ? 'the reference' : `${row.identicalToAlone} of ${row.compared} compared`,
        ]),
      ).join('\n'),
    );
    console.log(
      markdownTable(
        [
          'clients',
          'wall ms',
          'rounds with prefill: count, ms, rows',
          'step-only rounds: count, ms, ms each',
          'of which in the step, ms each',
          'a replayed step on the device, ms each (replays)',
          'a step (every round): tables written, work enqueued, read back, ms each',
          'longest step since start, ms',
          'step graphs recorded, steps without one',
          'lanes a round',
          'ms outside rounds',
        ],
        throughput.map((row) => {
          const rounds = row.prefillRounds! + row.stepRounds!;
          return [
            String(row.clients),
            row.wallMs!.toFixed(0),
            `${row.prefillRounds}, ${row.prefillRoundMs!.toFixed(0)}, ${row.prefillRows}`,
            `${row.stepRounds}, ${row.stepRoundMs!.toFixed(0)}, ${(row.stepRoundMs! / Math.max(1, row.stepRounds!)).toFixed(2)}`,
            (row.stepCallMs! / Math.max(1, row.stepRounds!)).toFixed(2),
            `${(row.stepReplayMs! / Math.max(1, row.stepReplays!)).toFixed(2)} (${row.stepReplays})`,
            [row.stepTablesMs!, row.stepEnqueueMs!, row.stepReadBackMs!]
              .map((ms) => (ms / Math.max(1, rounds)).toFixed(2))
              .join(', '),
            row.longestStepCallMs!.toFixed(1),
            `${row.stepRecordings}, ${row.directSteps}`,
            (row.laneSteps! / Math.max(1, rounds)).toFixed(1),
            row.outsideRoundsMs!.toFixed(0),
          ];
        }),
      ).join('\n'),
    );
    console.log(
      markdownTable(
        [
          'clients: the slowest stream, ms from arrival',
          'RTF',
          ...FIRST_AUDIO_STAGES.map(([, label]) => label),
          'client has its last byte (from its send)',
        ],
        slowest.map((row) => [
          `${row.clients}: ${row.request}`,
          row.rtf.toFixed(3),
          ...FIRST_AUDIO_STAGES.map(([key]) => row[key].toFixed(1)),
          row.totalMs.toFixed(1),
        ]),
      ).join('\n'),
    );
    console.log(
      `peak resident memory ${(memory.peakRssBytes / 2 ** 30).toFixed(2)} GiB; lane memory ${JSON.stringify(memory.lanes)}`,
    );
    const file = writeReport('gpu-serve.json', {
      backend,
      preset,
      reusedCheckpoint: reused,
      perClient,
      writeSeconds,
      syncSeconds,
      loadSeconds,
      notices: engine.info.notices,
      firstAudio,
      firstAudioStages,
      throughput,
      slowest,
      memory,
    });
    console.log(`wrote ${file}`);
    served = throughput.map((row) => ({ clients: row.clients!, framesPerSecond: row.framesPerSecond! }));
  } finally {
    await app.close();
    await engine.close();
  }
  if (backend === 'cuda' && served.length > 0) await printRoofline(dir, served);
} finally {
  fs.rmSync(folder, { recursive: true, force: true });
}
