// Loads a checkpoint folder's speech model onto a backend the caller chose: config → weight check → every tensor in
// its stored dtype, with shapes from the weight map → a SlotSpeechModel planned for the default lane capacity.
import type { Backend } from '../backend/types.ts';
import { SafetensorsCheckpoint } from '../checkpoint/safetensors-reader.ts';
import { DramaError } from '../errors.ts';
import { Backbone } from './backbone.ts';
import { candidateIds } from './candidates.ts';
import { loadConfig } from './config.ts';
import { SlotSpeechModel } from './speech-model.ts';
import { TensorSource } from './tensor-source.ts';
import { Tower } from './tower.ts';
import type { LaneCapacity } from './types.ts';
import { backboneNames, expectedTensors } from './weights.ts';
import { assertWeightsMatch, checkWeights } from './weights-check.ts';

const DEFAULT_PREFILL_CHUNK = 256;

export interface SpeechModelOptions {
  /** Most prompt rows one backbone call takes. */
  readonly prefillChunk?: number;
  /** Lanes and rows per lane to plan at load (the engine re-plans for its own). */
  readonly capacity?: LaneCapacity;
}

export async function loadSpeechModel<B>(
  checkpointDir: string,
  backend: Backend<B>,
  options: SpeechModelOptions = {},
): Promise<SlotSpeechModel<B>> {
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
    const specs = expectedTensors(config, { prefix: check.prefix, experts: check.experts });
    const source = new TensorSource(checkpoint, backend, specs);
    const candidates = await candidateIds(checkpointDir, config);
    const backbone = await Backbone.load(source, config.text, check.prefix, candidates.ids);
    const tower = await Tower.load(source, config.tower, config.audio, config.text);
    const codeEmbeddings = await source.tensor(backboneNames(check.prefix).codebookEmbeddings);
    const model = new SlotSpeechModel(loaded, backend, backbone, tower, codeEmbeddings, candidates, prefillChunk);
    if (options.capacity !== undefined) model.plan(options.capacity);
    return model;
  } finally {
    await checkpoint.close();
  }
}
