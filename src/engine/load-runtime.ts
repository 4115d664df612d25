// Builds the engine's runtime from a plain description (it crosses into the worker thread as workerData): the null
// runtime for tests, or a checkpoint folder loaded on the backend backend-choice.ts picks (the one place that does).

import { CpuBackend } from '../backend/cpu/backend.ts';
import { CudaBackend } from '../backend/cuda/backend.ts';
import { loadCheckpointCodec } from '../codec/reference.ts';
import { DramaError } from '../errors.ts';
import { loadConfig } from '../model/config.ts';
import { loadSpeechModel } from '../model/load-model.ts';
import { type BackendName, chooseBackend } from './backend-choice.ts';
import { loadCheckpointRuntime } from './checkpoint-runtime.ts';
import { checkedStream } from './engine-codes.ts';
import { NullCodec, type NullCodecOptions } from './null-codec.ts';
import { type NullModelOptions, NullSpeechModel } from './null-model.ts';
import { NullTextFrontEnd } from './null-text.ts';
import type { EngineCodec, SpeechRuntime } from './runtime.ts';

export type RuntimeSpec =
  | { readonly kind: 'null'; readonly model?: NullModelOptions; readonly codec?: NullCodecOptions }
  | {
      readonly kind: 'checkpoint';
      readonly dir: string;
      readonly prefillChunk?: number;
      /** Which backend runs the speech model (default auto). */
      readonly backend?: BackendName;
    };

export async function loadRuntime(spec: RuntimeSpec): Promise<SpeechRuntime> {
  if (spec.kind === 'null') {
    return {
      modelId: 'drama3-null',
      model: new NullSpeechModel(spec.model),
      codec: new NullCodec(spec.codec),
      text: new NullTextFrontEnd(),
    };
  }
  try {
    const choice = chooseBackend(spec.backend ?? 'auto', (await loadConfig(spec.dir)).config);
    const load = (dir: string, options: { prefillChunk?: number }) =>
      choice.backend === 'cuda'
        ? loadSpeechModel(dir, new CudaBackend(), options)
        : loadSpeechModel(dir, new CpuBackend(), options);
    const runtime = await loadCheckpointRuntime(spec.dir, spec.prefillChunk, load);
    return { ...runtime, backend: choice.backend, notices: [choice.reason, ...(runtime.notices ?? [])] };
  } catch (error) {
    if (error instanceof DramaError) throw error;
    throw new DramaError('CHECKPOINT_LOAD_FAILED', `could not load the checkpoint in ${spec.dir}: ${String(error)}`, {
      kind: 'bad_checkpoint',
      param: 'model',
      cause: error,
    });
  }
}

/** The codec alone (for the decode thread): decode only, no reference encode. */
export async function loadEngineCodec(spec: RuntimeSpec): Promise<EngineCodec> {
  if (spec.kind === 'null') return new NullCodec(spec.codec);
  const codec = await loadCheckpointCodec(spec.dir);
  return {
    sampleRate: codec.config.sampleRate,
    frameLength: codec.config.frameLength,
    openStream: () => checkedStream(codec.openStream(), codec.config),
  };
}
