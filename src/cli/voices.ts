// `drama3 voices add NAME --audio FILE --text "..."`, `voices list`, `voices rm NAME`: the voice catalog from the
// command line (the same folder `serve --voices DIR` uses; a running server takes changes in within a second). Also
// the `--voices` option and the catalog set-up that `serve` shares.
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { type BackendProbes, REAL_PROBES } from '../engine/backend-choice.ts';
import { codecChoiceOf, type RuntimeSpec } from '../engine/load-runtime.ts';
import { DEFAULT_REFERENCE_CACHE_BYTES } from '../engine/reference-cache.ts';
import { DramaError } from '../errors.ts';
import type { VoicesOptions } from '../server/routes/voices.ts';
import { VoiceCatalog } from '../voices/catalog.ts';
import { voiceEncoderFor } from '../voices/encoder.ts';
import type { VoiceEncodeDevice, VoiceEncoderSource } from '../voices/encoder-thread.ts';
import { voiceSeconds } from '../voices/names.ts';
import { catalogResolver } from '../voices/resolver.ts';
import { DEFAULT_CACHE_DIR, resolveRuntime } from './default-model.ts';

/** The catalog under the user's data directory ($XDG_DATA_HOME, else ~/.local/share). */
const DEFAULT_VOICES_DIR = join(process.env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), 'drama3', 'voices');

export function voicesOption(): Option {
  return new Option('--voices <dir>', 'voice catalog folder').env('DRAMA3_VOICES').default(DEFAULT_VOICES_DIR);
}

/** `--reference-cache <MiB>`: the reference-prefix cache's byte budget; 0 turns the cache off. */
export function referenceCacheOption(): Option {
  return new Option('--reference-cache <MiB>', 'memory for cached reference prefixes (0: off)')
    .env('DRAMA3_REFERENCE_CACHE')
    .default(DEFAULT_REFERENCE_CACHE_BYTES / (1024 * 1024))
    .argParser((value) => {
      const parsed = Number(value);
      if (!Number.isInteger(parsed) || parsed < 0) throw new InvalidArgumentError(`expected MiB ≥ 0, got '${value}'`);
      return parsed;
    });
}

/** Where a runtime's references are encoded: on the device its codec decodes on, at the same precision. */
export function voiceEncoderSource(runtime: RuntimeSpec, probes: BackendProbes = REAL_PROBES): VoiceEncoderSource {
  if (runtime.kind === 'null') return runtime;
  const choice = codecChoiceOf(runtime, probes);
  const device: VoiceEncodeDevice =
    choice.backend === 'cuda' ? { backend: 'cuda', precision: choice.precision } : { backend: 'cpu' };
  return { kind: 'checkpoint', dir: runtime.dir, device };
}

/** Opens the catalog (reporting each corrupt folder by name) and the app options that serve it. */
export async function openVoices(dir: string, runtime: RuntimeSpec | Promise<RuntimeSpec>) {
  const catalog = await VoiceCatalog.open(dir);
  for (const problem of catalog.problems)
    console.error(`drama3: skipped the voice folder '${problem.folder}' in ${dir}: ${problem.reason}`);
  // One encoder thread serves catalog uploads and requests' one-off references, on the codec's device.
  const source = Promise.resolve(runtime).then((spec) => voiceEncoderSource(spec));
  // A refusal (cuda asked for where there is none) reaches each upload; the engine's load reports it at start.
  source.catch(() => {});
  const encoder = voiceEncoderFor(source);
  const voices: VoicesOptions = { catalog, encoder };
  return { voices, resolveVoice: catalogResolver(catalog), referenceEncoder: encoder };
}

interface VoicesFlags {
  readonly voices: string;
}

interface AddFlags extends VoicesFlags {
  readonly audio: string;
  readonly text: string;
  readonly overwrite: boolean;
  readonly model?: string;
  readonly nullModel?: boolean;
  readonly cacheDir: string;
}

async function add(name: string, flags: AddFlags): Promise<void> {
  const { voices } = await openVoices(flags.voices, resolveRuntime({ ...flags, prefillChunk: 1 }));
  const audio = new Uint8Array(await readFile(flags.audio));
  const encoded = await voices.encoder.encode(audio, flags.text).finally(() => voices.encoder.close());
  const voice = await voices.catalog.add({
    name,
    text: flags.text,
    audio,
    audioExtension: encoded.extension,
    frames: encoded.frames,
    overwrite: flags.overwrite,
  });
  console.log(`added voice '${voice.name}': ${voice.frames.length} frames, ${voice.audioBytes} bytes of audio`);
}

async function list(flags: VoicesFlags): Promise<void> {
  const catalog = await VoiceCatalog.open(flags.voices);
  for (const problem of catalog.problems) console.error(`skipped '${problem.folder}': ${problem.reason}`);
  const voices = catalog.list();
  if (voices.length === 0) console.log(`no voices in ${flags.voices}`);
  for (const voice of voices) {
    const seconds = voiceSeconds(voice.frames.length).toFixed(1);
    console.log(`${voice.name}\t${voice.createdAt}\t${voice.frames.length} frames (${seconds} s)\t${voice.text}`);
  }
}

async function remove(name: string, flags: VoicesFlags): Promise<void> {
  const catalog = await VoiceCatalog.open(flags.voices);
  await catalog.remove(name);
  console.log(`removed voice '${name}'`);
}

/** Runs a subcommand; a refusal prints its code and message and exits 1 instead of a stack trace. */
function run<A extends unknown[]>(action: (...args: A) => Promise<void>) {
  return async (...args: A) => {
    try {
      await action(...args);
    } catch (error) {
      if (!(error instanceof DramaError)) throw error;
      console.error(`drama3 voices: ${error.code}: ${error.message}`);
      process.exitCode = 1;
    }
  };
}

export function registerVoices(program: Command): void {
  const voices = program.command('voices').description('Manage the voice catalog (add, list, rm)');
  voices
    .command('add <name>')
    .description('Encode a reference recording and store it as a named voice')
    .requiredOption('--audio <file>', 'reference recording (wav, mp3, flac, ogg, aac; at most 10 MB)')
    .requiredOption('--text <transcript>', 'what the recording says')
    .option('--overwrite', 'replace a voice of the same name', false)
    .option('--model <dir>', 'checkpoint whose codec encodes the audio (default: the embedded tiny checkpoint)')
    .option('--null-model', "use the test engine's codec-free encoder")
    .option('--cache-dir <dir>', 'where the embedded tiny checkpoint lives', DEFAULT_CACHE_DIR)
    .addOption(voicesOption())
    .action(run((name: string, flags: AddFlags) => add(name, flags)));
  voices
    .command('list')
    .description('List the voices in the catalog')
    .addOption(voicesOption())
    .action(run((flags: VoicesFlags) => list(flags)));
  voices
    .command('rm <name>')
    .description('Remove a voice from the catalog')
    .addOption(voicesOption())
    .action(run((name: string, flags: VoicesFlags) => remove(name, flags)));
}
