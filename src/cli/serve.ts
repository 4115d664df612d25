// `drama3 serve`: the HTTP server. It listens at once (503 while the model loads, so the URL is usable immediately),
// then starts the engine in its worker thread. Every flag has an environment twin; `--help` prints the defaults.
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { CodecPrecision } from '../backend/cuda/ops/codecConv.ts';
import { BACKEND_NAMES, type BackendName } from '../engine/backend-choice.ts';
import { CODEC_PRECISIONS } from '../engine/codec-choice.ts';
import { DEFAULT_CUDA_CODEC_SETTINGS } from '../engine/cuda-codec.ts';
import { Engine } from '../engine/engine.ts';
import { DEFAULT_ENGINE_SETTINGS, type EngineSettings } from '../engine/engine-core.ts';
import { DEFAULT_MEMORY_ROWS_PER_LANE } from '../engine/lane-budget.ts';
import type { RuntimeSpec } from '../engine/load-runtime.ts';
import { isDramaError } from '../errors.ts';
import { SYNTHETIC_WEIGHTS_NOTICE } from '../model/config.ts';
import { buildApp } from '../server/app.ts';
import { audioToolkit } from '../server/audio-toolkit.ts';
import { loadApiKeys } from '../server/auth.ts';
import { DEFAULT_MAX_BUFFERED_REPLY_BYTES, DEFAULT_MAX_HELD_REPLY_BYTES } from '../server/speech-reply.ts';
import { DEFAULT_TIMEOUTS } from '../server/timeouts.ts';
import { DEFAULT_CACHE_DIR, resolveRuntime } from './default-model.ts';
import { openVoices, referenceCacheOption, voicesOption } from './voices.ts';

export function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1)
    throw new InvalidArgumentError(`expected a positive integer, got '${value}'`);
  return parsed;
}

function port(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > 65535)
    throw new InvalidArgumentError(`expected a port 0..65535, got '${value}'`);
  return parsed;
}

/** Model and engine flags shared by `serve` and `say`. */
export function addEngineOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--model <dir>', 'checkpoint folder (default: the embedded tiny synthetic checkpoint)').env(
        'DRAMA3_MODEL',
      ),
    )
    .addOption(
      new Option(
        '--null-model',
        'use the built-in test engine (no model: deterministic tones) instead of a checkpoint',
      ).env('DRAMA3_NULL_MODEL'),
    )
    .addOption(
      new Option(
        '--backend <name>',
        'what runs the model: cuda, cpu, or auto (cuda when a GPU, its kernels and the model allow it, else cpu)',
      )
        .choices([...BACKEND_NAMES])
        .env('DRAMA3_BACKEND')
        .default('auto'),
    )
    .addOption(
      new Option(
        '--codec-backend <name>',
        'where the codec decodes: cuda, cpu, or auto (cuda when a GPU and its kernels are there, unless --backend cpu)',
      )
        .choices([...BACKEND_NAMES])
        .env('DRAMA3_CODEC_BACKEND')
        .default('auto'),
    )
    .addOption(
      new Option(
        '--codec-precision <mode>',
        'CUDA codec precision: f16 (fp16 weights and inputs on tensor cores, as the release runs them), f16-weights (fp16 weights, fp32 inputs) or f32 (the checking mode); fp32 sums in every mode',
      )
        .choices([...CODEC_PRECISIONS])
        .env('DRAMA3_CODEC_PRECISION')
        .default(DEFAULT_CUDA_CODEC_SETTINGS.precision),
    )
    .addOption(
      new Option('--cache-dir <dir>', 'where the embedded tiny checkpoint is created once')
        .env('DRAMA3_CACHE_DIR')
        .default(DEFAULT_CACHE_DIR),
    )
    .addOption(
      new Option('--prefill-chunk <rows>', 'prompt rows prefilled per lane between frame rounds')
        .env('DRAMA3_PREFILL_CHUNK')
        .default(DEFAULT_ENGINE_SETTINGS.prefillChunk)
        .argParser(positiveInteger),
    )
    .addOption(
      new Option('--max-frames <frames>', 'most frames one request may generate')
        .env('DRAMA3_MAX_FRAMES')
        .default(DEFAULT_ENGINE_SETTINGS.maxFrames)
        .argParser(positiveInteger),
    )
    .addOption(
      new Option('--max-input <code points>', 'input text limit in Unicode code points')
        .env('DRAMA3_MAX_INPUT')
        .default(DEFAULT_ENGINE_SETTINGS.maxInputCodePoints)
        .argParser(positiveInteger),
    )
    .addOption(
      new Option(
        '--memory-rows <rows>',
        `lane memory budget: prompt rows + frames all lanes may hold together (default: on cuda what fits the device, on the cpu lanes × ${DEFAULT_MEMORY_ROWS_PER_LANE})`,
      )
        .env('DRAMA3_MEMORY_ROWS')
        .argParser(positiveInteger),
    )
    .addOption(
      new Option('--piece-length <code points>', 'long text is spoken in pieces of at most this many code points')
        .env('DRAMA3_PIECE_LENGTH')
        .default(DEFAULT_ENGINE_SETTINGS.pieceLength)
        .argParser(positiveInteger),
    );
}

export interface EngineFlags {
  readonly model?: string;
  readonly nullModel?: boolean;
  readonly cacheDir: string;
  readonly backend?: BackendName;
  readonly codecBackend?: BackendName;
  readonly codecPrecision?: CodecPrecision;
  readonly prefillChunk: number;
  readonly maxFrames: number;
  readonly maxInput: number;
  readonly pieceLength: number;
  readonly memoryRows?: number;
  readonly referenceCache?: number;
}

export function engineSettings(flags: EngineFlags, lanes: number): EngineSettings {
  return {
    lanes,
    prefillChunk: flags.prefillChunk,
    maxFrames: flags.maxFrames,
    maxInputCodePoints: flags.maxInput,
    pieceLength: flags.pieceLength,
    memoryRows: flags.memoryRows,
    referenceCacheBytes: flags.referenceCache === undefined ? undefined : flags.referenceCache * 1024 * 1024,
  };
}

interface ServeFlags extends EngineFlags {
  readonly host: string;
  readonly port: number;
  readonly lanes: number;
  readonly queue: number;
  readonly apiKey: string[];
  readonly apiKeyFile?: string;
  readonly log: boolean;
  readonly voices: string;
  readonly requestTimeout: number;
  readonly bodyTimeout: number;
  readonly maxBufferedReply: number;
  readonly maxHeldReply: number;
}

function milliseconds(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0)
    throw new InvalidArgumentError(`expected milliseconds ≥ 0 (0: no limit), got '${value}'`);
  return parsed;
}

async function serve(flags: ServeFlags): Promise<void> {
  const runtime: Promise<RuntimeSpec> = resolveRuntime(flags).then((spec) =>
    spec.kind === 'checkpoint' ? { ...spec, progress: true } : spec,
  );
  const engine = runtime.then((spec) =>
    Engine.start({
      runtime: spec,
      settings: engineSettings(flags, flags.lanes),
      queueLimit: flags.queue,
      thread: 'worker',
    }),
  );
  // A refusal can come before buildApp takes the promise; it is reported where the engine is awaited below.
  engine.catch(() => {});
  const app = await buildApp({
    engine,
    audio: audioToolkit,
    apiKeys: loadApiKeys(flags.apiKey, flags.apiKeyFile),
    pagePath: new URL('../../web/index.html', import.meta.url),
    logger: flags.log,
    processMetrics: true,
    timeouts: { requestMs: flags.requestTimeout, bodyMs: flags.bodyTimeout },
    maxBufferedReplyBytes: flags.maxBufferedReply,
    maxHeldReplyBytes: flags.maxHeldReply,
    ...(await openVoices(flags.voices, runtime)),
  });
  const address = await app.listen({ host: flags.host, port: flags.port });
  console.log(`drama3 listening on ${address} (loading the model; /health answers 503 until it is ready)`);
  const shutdown = () => void app.close().then(() => process.exit(0));
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
  try {
    const ready = await engine;
    const { info } = ready;
    console.log(
      `drama3 ready: ${info.modelId}, ${info.lanes} lanes, context ${info.contextRows} rows, at most ${info.maxFrames} frames a request`,
    );
    for (const notice of info.notices) console.log(`drama3: ${notice}`);
    const { memory } = info;
    if (memory.device !== undefined) {
      const left = memory.device.limitBytes - memory.device.usedBytes;
      console.log(
        `drama3: each lane holds ${info.rowsPerLane} rows of ${memory.bytesPerPromptRow} device bytes and ${memory.fixedBytesPerLane} fixed; ${left} bytes left under the allocation cap`,
      );
    }
    if (info.synthetic) console.log(`WARNING: ${SYNTHETIC_WEIGHTS_NOTICE}`);
    console.log(
      `Open ${address}/ for the playground, or: curl -s ${address}/v1/audio/speech -H 'content-type: application/json' -d '{"input":"Hello!","response_format":"wav"}' -o hello.wav`,
    );
  } catch (error) {
    const reason = isDramaError(error) ? `${error.code}: ${error.message}` : String(error);
    console.error(`drama3: the model could not be loaded: ${reason}`);
    await app.close();
    process.exitCode = 1;
  }
}

export function registerServe(program: Command): void {
  const command = program
    .command('serve')
    .description('Run the HTTP server (OpenAI /v1/audio/speech, Fish /v1/tts, playground at /)')
    .addOption(new Option('--host <host>', 'address to listen on').env('DRAMA3_HOST').default('127.0.0.1'))
    .addOption(
      new Option('--port <port>', 'port to listen on (0: any free port)')
        .env('DRAMA3_PORT')
        .default(8080)
        .argParser(port),
    )
    .addOption(
      new Option('--lanes <n>', 'requests generated together in each frame round')
        .env('DRAMA3_LANES')
        .default(4)
        .argParser(positiveInteger),
    )
    .addOption(
      new Option('--queue <n>', 'requests that may wait for a lane; beyond that 503')
        .env('DRAMA3_QUEUE')
        .default(16)
        .argParser((value) => (value === '0' ? 0 : positiveInteger(value))),
    )
    .addOption(
      new Option('--api-key <key>', 'require Authorization: Bearer <key> (repeatable)')
        .env('DRAMA3_API_KEY')
        .default([])
        .argParser((value: string, previous: string[]) => [...previous, value]),
    )
    .addOption(new Option('--api-key-file <file>', 'file with one API key a line').env('DRAMA3_API_KEY_FILE'))
    .addOption(new Option('--log', 'log each request (JSON lines)').env('DRAMA3_LOG').default(false))
    .addOption(
      new Option('--request-timeout <ms>', 'most time to receive a whole request, headers and body (0: no limit)')
        .env('DRAMA3_REQUEST_TIMEOUT')
        .default(DEFAULT_TIMEOUTS.requestMs)
        .argParser(milliseconds),
    )
    .addOption(
      new Option('--body-timeout <ms>', 'most time from the end of the headers to the end of the body (0: no limit)')
        .env('DRAMA3_BODY_TIMEOUT')
        .default(DEFAULT_TIMEOUTS.bodyMs)
        .argParser(milliseconds),
    )
    .addOption(
      new Option(
        '--max-buffered-reply <bytes>',
        'unsent bytes a streamed reply may hold for a client that does not read',
      )
        .env('DRAMA3_MAX_BUFFERED_REPLY')
        .default(DEFAULT_MAX_BUFFERED_REPLY_BYTES)
        .argParser(positiveInteger),
    )
    .addOption(
      new Option(
        '--max-held-reply <bytes>',
        'bytes a reply that is not streamed may hold until its end (past them: 413, stream it instead)',
      )
        .env('DRAMA3_MAX_HELD_REPLY')
        .default(DEFAULT_MAX_HELD_REPLY_BYTES)
        .argParser(positiveInteger),
    );
  command.addOption(voicesOption()).addOption(referenceCacheOption());
  addEngineOptions(command).action((flags: ServeFlags) => serve(flags));
}
