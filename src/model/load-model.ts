// Loads a checkpoint folder's speech model onto a backend the caller chose: config → weight check → every tensor in
// its stored dtype, with shapes from the weight map → a SlotSpeechModel planned for the default lane capacity. A
// backend with a weight store gets the checkpoint streamed into it (streamed-source.ts); others, or `stream: false`,
// read and upload tensor by tensor in the loaders' order (tensor-source.ts).
import type { Backend } from '../backend/types.ts';
import { SafetensorsCheckpoint } from '../checkpoint/safetensors-reader.ts';
import { DramaError } from '../errors.ts';
import { Backbone } from './backbone.ts';
import { candidateIds } from './candidates.ts';
import { loadConfig } from './config.ts';
import { SlotSpeechModel } from './speech-model.ts';
import { type StreamedLoadOptions, type StreamedLoadReport, StreamedSource } from './streamed-source.ts';
import { TensorSource, type WeightSource } from './tensor-source.ts';
import { Tower } from './tower.ts';
import type { LaneCapacity } from './types.ts';
import { backboneNames, type TensorSpec } from './weights.ts';
import { assertWeightsMatch, checkWeights } from './weights-check.ts';

const DEFAULT_PREFILL_CHUNK = 256;

export interface SpeechModelOptions {
  /** Most prompt rows one backbone call takes. */
  readonly prefillChunk?: number;
  /** Lanes and rows per lane to plan at load (the engine re-plans for its own). */
  readonly capacity?: LaneCapacity;
  /** How the checkpoint is streamed into the backend's weight store; false reads tensor by tensor. */
  readonly stream?: StreamedLoadOptions | false;
  /** Told how the streamed load went (bytes, seconds, O_DIRECT or not). */
  readonly onStreamed?: (report: StreamedLoadReport) => void;
  /** Told, once the model is built, the seconds before the weights' load began and after it ended. */
  readonly onBuilt?: (times: ModelLoadTimes) => void;
}

/** The parts of a model's load beside reading its weights: config, weight check and candidates; then building. */
export interface ModelLoadTimes {
  readonly checkSeconds: number;
  readonly buildSeconds: number;
}

async function weightSource<B>(
  checkpoint: SafetensorsCheckpoint,
  backend: Backend<B>,
  specs: readonly TensorSpec[],
  options: SpeechModelOptions,
  keptRows: ReadonlyMap<string, Int32Array>,
): Promise<{ source: WeightSource<B>; streamed?: StreamedSource<B> }> {
  const store = options.stream === false ? undefined : backend.weightStore?.();
  if (store === undefined) return { source: new TensorSource(checkpoint, backend, specs) };
  const streamed = await StreamedSource.load(checkpoint, backend, store, specs, options.stream || {}, keptRows);
  options.onStreamed?.(streamed.report);
  return { source: streamed, streamed };
}

export async function loadSpeechModel<B>(
  checkpointDir: string,
  backend: Backend<B>,
  options: SpeechModelOptions = {},
): Promise<SlotSpeechModel<B>> {
  const started = performance.now();
  const loaded = await loadConfig(checkpointDir);
  const config = loaded.config;
  const prefillChunk = options.prefillChunk ?? DEFAULT_PREFILL_CHUNK;
  if (!Number.isInteger(prefillChunk) || prefillChunk < 1) {
    throw new DramaError('PREFILL_CHUNK_INVALID', `prefill chunk ${prefillChunk} must be a positive integer`, {
      param: 'prefill-chunk',
    });
  }
  const checkpoint = await SafetensorsCheckpoint.open(checkpointDir);
  try {
    const check = checkWeights(config, checkpoint);
    assertWeightsMatch(check, checkpointDir);
    const candidates = await candidateIds(checkpointDir, config);
    const checked = performance.now();
    const keptRows = Backbone.keptRows(config.text, check.prefix, candidates.ids);
    const { source, streamed } = await weightSource(checkpoint, backend, check.specs, options, keptRows);
    const weighed = performance.now();
    try {
      const backbone = await Backbone.load(source, config.text, check.prefix, candidates.ids);
      const tower = await Tower.load(source, config.tower, config.audio, config.text);
      const codeEmbeddings = await source.tensor(backboneNames(check.prefix).codebookEmbeddings);
      streamed?.finish();
      const model = new SlotSpeechModel(loaded, backend, backbone, tower, codeEmbeddings, candidates, prefillChunk);
      options.onBuilt?.({
        checkSeconds: (checked - started) / 1000,
        buildSeconds: (performance.now() - weighed) / 1000,
      });
      if (options.capacity !== undefined) model.plan(options.capacity);
      return model;
    } catch (error) {
      streamed?.release();
      throw error;
    }
  } finally {
    await checkpoint.close();
  }
}
