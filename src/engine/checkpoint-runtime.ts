// The runtime of a checkpoint folder on the cpu backend: the speech model, the codec (streamed decode; references
// arrive encoded), and the tokenizer-backed text front end (normalisation, splitting, reference prompt).
import { basename, resolve } from 'node:path';
import type { Codec } from '../codec/codec.ts';
import { loadCheckpointCodec } from '../codec/reference.ts';
import type { SpeechModel } from '../model/types.ts';
import { buildPrompt } from '../text/prompt.ts';
import { splitLongText, withSpeakerTags } from '../text/split.ts';
import { Tokenizer } from '../text/tokenizer.ts';
import { checkedStream } from './engine-codes.ts';
import { joinFrames } from './frame-decoder.ts';
import type { EngineCodec, SpeechRuntime } from './runtime.ts';

/** Loads the speech model of a checkpoint folder (the model module's `loadSpeechModel`). */
export type SpeechModelLoader = (
  dir: string,
  options: { prefillChunk?: number },
) => Promise<SpeechModel & { readonly unknownKeys?: readonly string[]; readonly defaulted?: readonly string[] }>;

/** The loaded cpu codec as the engine decodes with it: its streams' frames checked first. */
export function cpuEngineCodec(codec: Codec): EngineCodec {
  return {
    sampleRate: codec.config.sampleRate,
    frameLength: codec.config.frameLength,
    openStream: () => checkedStream(codec.openStream(), codec.config),
  };
}

/** Loads the codec of a checkpoint folder as the runtime's engine uses it. */
export type EngineCodecLoader = (dir: string) => Promise<EngineCodec>;

export const loadCpuEngineCodec: EngineCodecLoader = async (dir) => cpuEngineCodec(await loadCheckpointCodec(dir));

export interface CheckpointRuntimeOptions {
  /** Default: the folder's codec, decoding on the cpu. */
  readonly loadCodec?: EngineCodecLoader;
  /** Told the model as soon as it is loaded, while the codec and the tokenizer may still load; not after a failure. */
  readonly onModel?: (model: SpeechModel) => void;
}

export async function loadCheckpointRuntime(
  dir: string,
  prefillChunk: number | undefined,
  loadModel: SpeechModelLoader,
  options: CheckpointRuntimeOptions = {},
): Promise<SpeechRuntime> {
  const started = performance.now();
  const loadCodec = options.loadCodec ?? loadCpuEngineCodec;
  const loads = [
    timed(started, loadModel(dir, prefillChunk === undefined ? {} : { prefillChunk })),
    timed(started, loadCodec(dir)),
    timed(started, Tokenizer.load(dir)),
  ] as const;
  // Once a load has failed, start-up fails with its error: a model that arrives later is not handed on.
  let failed = false;
  for (const loading of loads) {
    loading.catch(() => {
      failed = true;
    });
  }
  const handed = loads[0].then(([loaded]) => {
    if (!failed) options.onModel?.(loaded);
  });
  const [[model, modelSeconds], [codec, codecSeconds], [tokenizer, tokenizerSeconds]] = await Promise.all([
    ...loads,
    handed,
  ]);
  return {
    modelId: basename(resolve(dir)),
    model,
    notices: [
      tokenizer.describe(),
      `loaded together: the model in ${modelSeconds.toFixed(1)} s, the codec in ${codecSeconds.toFixed(1)} s, the tokenizer in ${tokenizerSeconds.toFixed(1)} s`,
      ...(model.unknownKeys?.length ? [`config.json keys not used: ${model.unknownKeys.join(', ')}`] : []),
      ...(model.defaulted?.length
        ? [`config.json sections absent, real values assumed: ${model.defaulted.join(', ')}`]
        : []),
    ],
    codec,
    text: {
      split: (text, budget) => withSpeakerTags(splitLongText(text, { maxCodePoints: budget })),
      prompt(request) {
        const rows = buildPrompt(
          tokenizer,
          {
            text: request.text,
            instructions: request.instructions,
            normalize: request.normalize,
            references: request.references.map((reference) => ({
              text: reference.text,
              codes: joinFrames(reference.frames),
            })),
          },
          request.limits,
        );
        return { rows, textTokens: rows.textTokens };
      },
    },
  };
}

/** The value and the seconds from `started` until it settled (loads run together, so each is its finishing time). */
async function timed<T>(started: number, loading: Promise<T>): Promise<[T, number]> {
  const value = await loading;
  return [value, (performance.now() - started) / 1000];
}
