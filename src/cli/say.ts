// `drama3 say`: text (arguments or stdin) → an audio file or stdout, through the same engine and encoders as the
// server. `--stream` writes audio as it is generated (pipe it into a player); otherwise the file is written whole.
// `--voice` clones a catalog voice; `--codes-out` also writes the generated frames (code[0..9] per frame) as JSON.
import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { Engine } from '../engine/engine.ts';
import { splitFrames } from '../engine/frame-decoder.ts';
import { DramaError } from '../errors.ts';
import { SYNTHETIC_WEIGHTS_NOTICE } from '../model/config.ts';
import type { ReferenceInput } from '../model/reference-input.ts';
import { DEFAULT_SAMPLING } from '../model/types.ts';
import { openAudioOutput } from '../server/audio-output.ts';
import { audioToolkit } from '../server/audio-toolkit.ts';
import { SPEECH_FORMATS, type SpeechFormat } from '../server/schemas.ts';
import { deserializeError } from '../threads/serialize-error.ts';
import { VoiceCatalog } from '../voices/catalog.ts';
import { catalogReference } from '../voices/resolver.ts';
import { resolveRuntime } from './default-model.ts';
import { addEngineOptions, type EngineFlags, engineSettings, positiveInteger } from './serve.ts';
import { voicesOption } from './voices.ts';

interface SayFlags extends EngineFlags {
  readonly out: string;
  readonly format?: SpeechFormat;
  readonly sampleRate?: number;
  readonly seed: number;
  readonly frames?: number;
  readonly instructions?: string;
  readonly stream: boolean;
  readonly speed?: number;
  readonly voice?: string;
  readonly voices: string;
  readonly codesOut?: string;
}

/** The catalog voice's transcript and stored frames, or none for the default voice. */
async function voiceReferences(flags: SayFlags): Promise<ReferenceInput[]> {
  if (flags.voice === undefined) return [];
  const voice = (await VoiceCatalog.open(flags.voices)).get(flags.voice);
  if (voice === undefined)
    throw new DramaError('VOICE_NOT_FOUND', `no voice '${flags.voice}' in the catalog at ${flags.voices}`, {
      kind: 'not_found',
      param: 'voice',
    });
  return [catalogReference(voice)];
}

function formatOf(flags: SayFlags): SpeechFormat {
  if (flags.format !== undefined) return flags.format;
  const extension = extname(flags.out).slice(1).toLowerCase();
  if (extension === 'ogg') return 'opus';
  return (SPEECH_FORMATS as readonly string[]).includes(extension) ? (extension as SpeechFormat) : 'wav';
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').trim();
}

async function say(words: string[], flags: SayFlags): Promise<void> {
  const text = words.length > 0 ? words.join(' ') : await readStdin();
  const references = await voiceReferences(flags);
  const engine = await Engine.start({
    runtime: await resolveRuntime(flags),
    settings: engineSettings(flags, 1),
    queueLimit: 0,
    thread: 'inline',
  });
  if (engine.info.synthetic) console.error(`WARNING: ${SYNTHETIC_WEIGHTS_NOTICE}`);
  const format = formatOf(flags);
  const output = await openAudioOutput(audioToolkit, engine.info.sampleRate, {
    format,
    sampleRate: flags.sampleRate ?? engine.info.sampleRate,
    speed: flags.speed,
  });
  const toStdout = flags.out === '-';
  const sink = flags.stream ? (toStdout ? process.stdout : createWriteStream(flags.out)) : undefined;
  const pieces: Uint8Array[] = [];
  const emit = (bytes: Uint8Array) => {
    if (bytes.length === 0) return;
    if (sink !== undefined) sink.write(bytes);
    else pieces.push(bytes);
  };
  const started = performance.now();
  let firstAudio: number | undefined;
  const frames: number[][] = [];
  let finishReason = '';
  const job = {
    text,
    instructions: flags.instructions,
    references,
    sampling: { ...DEFAULT_SAMPLING, seed: flags.seed },
    maxFrames: flags.frames,
    normalize: true,
    pieceLength: undefined,
  };
  try {
    const summary = await new Promise<string>((resolve, reject) => {
      engine.submit(job, (event) => {
        if (event.type === 'audio') {
          firstAudio ??= performance.now() - started;
          emit(output.push(event.pcm));
          for (const frame of splitFrames(event.codes)) frames.push([...frame]);
        } else if (event.type === 'finished') {
          finishReason = event.reason;
          const seconds = (event.usage.outputFrames * engine.info.frameLength) / engine.info.sampleRate;
          output.finish().then((bytes) => {
            emit(bytes);
            resolve(
              `${event.usage.outputFrames} frames (${seconds.toFixed(2)} s of audio), finish reason ${event.reason}, ` +
                `first audio after ${(firstAudio ?? 0).toFixed(0)} ms, total ${(performance.now() - started).toFixed(0)} ms`,
            );
          }, reject);
        } else if (event.type === 'failed') reject(deserializeError(event.error));
      });
    });
    if (sink === undefined) {
      const bytes = Buffer.concat(pieces);
      if (toStdout) process.stdout.write(bytes);
      else await writeFile(flags.out, bytes);
    } else if (!toStdout) await new Promise<void>((resolve) => sink.end(() => resolve()));
    if (flags.codesOut !== undefined)
      await writeFile(flags.codesOut, `${JSON.stringify({ seed: flags.seed, finish_reason: finishReason, frames })}\n`);
    console.error(`drama3 say: ${summary}${toStdout ? '' : ` → ${flags.out}`}`);
  } finally {
    // After a failure the encoder was never finished: free it (a no-op after finish).
    output.abort();
    await engine.close();
  }
}

export function registerSay(program: Command): void {
  const command = program
    .command('say')
    .description('Speak text (arguments, or stdin when none) into an audio file or stdout')
    .argument('[text...]', 'the text to speak')
    .addOption(new Option('-o, --out <file>', "output file; '-' for stdout").default('-'))
    .addOption(
      new Option('--format <format>', 'audio format (default: from the file extension, else wav)').choices(
        SPEECH_FORMATS,
      ),
    )
    .addOption(
      new Option('--sample-rate <hz>', 'output sample rate (default: the native 44100)').argParser(positiveInteger),
    )
    .addOption(
      new Option('--seed <n>', 'sampling seed').default(0).argParser((value) => {
        const seed = Number(value);
        if (!Number.isInteger(seed) || seed < 0 || seed >= 2 ** 32)
          throw new InvalidArgumentError(`seed must be 0..2^32-1, got ${value}`);
        return seed;
      }),
    )
    .addOption(new Option('--frames <n>', 'exact frame budget (refused if it does not fit)').argParser(positiveInteger))
    .addOption(new Option('--instructions <text>', 'a direction for how to speak'))
    .addOption(
      new Option('--speed <factor>', 'playback speed 0.25–4 with the pitch kept (default: 1)').argParser((value) => {
        const speed = Number(value);
        if (!(speed >= 0.25 && speed <= 4)) throw new InvalidArgumentError(`speed must be 0.25–4, got ${value}`);
        return speed;
      }),
    )
    .addOption(new Option('--stream', 'write audio as it is generated').default(false))
    .addOption(new Option('--voice <name>', 'clone this catalog voice (see `drama3 voices`)'))
    .addOption(voicesOption())
    .addOption(new Option('--codes-out <file>', 'also write the generated frames as JSON (code[0..9] per frame)'));
  addEngineOptions(command).action((words: string[], flags: SayFlags) => say(words, flags));
}
