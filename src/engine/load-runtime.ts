// Builds the engine's runtime from a plain description (it crosses into the worker thread as workerData): the null
// runtime for tests, or a checkpoint folder loaded on the backend backend-choice.ts picks (the one place that does).

import { CpuBackend } from '../backend/cpu/backend.ts';
import { CudaBackend } from '../backend/cuda/backend.ts';
import type { CodecPrecision } from '../backend/cuda/ops/codecConv.ts';
import type { Codec } from '../codec/codec.ts';
import { loadCheckpointCodec } from '../codec/reference.ts';
import { DramaError } from '../errors.ts';
import { type Drama3Config, loadConfig } from '../model/config.ts';
import { loadSpeechModel } from '../model/load-model.ts';
import { type BackendName, type BackendProbes, chooseBackend, REAL_PROBES } from './backend-choice.ts';
import { cpuEngineCodec, loadCheckpointRuntime } from './checkpoint-runtime.ts';
import { chooseCodecBackend } from './codec-choice.ts';
import { cudaEngineCodec, DEFAULT_CUDA_CODEC_SETTINGS, lazyCudaEngineCodec } from './cuda-codec.ts';
import type { DeviceMemory, RuntimeMemory } from './lane-budget.ts';
import { NullCodec, type NullCodecOptions } from './null-codec.ts';
import { type NullModelOptions, NullSpeechModel } from './null-model.ts';
import { NullTextFrontEnd } from './null-text.ts';
import type { EngineCodec, SpeechRuntime } from './runtime.ts';

/** A device ledger for the null runtime: its lane state counted in device bytes of `config` under a fixed cap. */
export interface NullDeviceOptions {
  readonly config: Drama3Config;
  readonly prefillChunk: number;
  readonly codecStreams?: number;
  readonly limitBytes: number;
  readonly usedBytes: number;
}

export type RuntimeSpec =
  | {
      readonly kind: 'null';
      readonly model?: NullModelOptions;
      readonly codec?: NullCodecOptions;
      readonly device?: NullDeviceOptions;
    }
  | {
      readonly kind: 'checkpoint';
      readonly dir: string;
      readonly prefillChunk?: number;
      /** Which backend runs the speech model (default auto). */
      readonly backend?: BackendName;
      /** Where the codec decodes (default auto: codec-choice.ts). */
      readonly codecBackend?: BackendName;
      /** The CUDA codec's weights (default DEFAULT_CUDA_CODEC_SETTINGS.precision). */
      readonly codecPrecision?: CodecPrecision;
    };

/** Where a checkpoint runtime's codec runs (the decode thread's and the voice encoder's): codec-choice.ts. */
export function codecChoiceOf(spec: Extract<RuntimeSpec, { kind: 'checkpoint' }>, probes: BackendProbes = REAL_PROBES) {
  const precision = spec.codecPrecision ?? DEFAULT_CUDA_CODEC_SETTINGS.precision;
  return chooseCodecBackend(spec.codecBackend ?? 'auto', spec.backend ?? 'auto', precision, probes);
}

/** The cuda backend's device ledger: bytes handed out or being allocated, under its cap. */
function deviceLedger(backend: CudaBackend): DeviceMemory {
  const usage = backend.cuda.memory.usage('device');
  return { limitBytes: usage.limitBytes, usedBytes: usage.usedBytes + usage.pendingBytes };
}

export async function loadRuntime(spec: RuntimeSpec): Promise<SpeechRuntime> {
  if (spec.kind === 'null') {
    const device = spec.device;
    return {
      modelId: 'drama3-null',
      model: new NullSpeechModel(spec.model),
      codec: new NullCodec(spec.codec),
      text: new NullTextFrontEnd(),
      ...(device === undefined
        ? {}
        : {
            memory: {
              config: device.config,
              prefillChunk: device.prefillChunk,
              codecStreams: device.codecStreams ?? 0,
              device: () => ({ limitBytes: device.limitBytes, usedBytes: device.usedBytes }),
            },
          }),
    };
  }
  try {
    const choice = chooseBackend(spec.backend ?? 'auto', (await loadConfig(spec.dir)).config);
    const codec = codecChoiceOf(spec);
    const settings = { ...DEFAULT_CUDA_CODEC_SETTINGS, precision: codec.precision };
    let memory: RuntimeMemory | undefined;
    const load = async (dir: string, options: { prefillChunk?: number }) => {
      if (choice.backend === 'cpu') return loadSpeechModel(dir, new CpuBackend(), options);
      const backend = new CudaBackend();
      const model = await loadSpeechModel(dir, backend, options);
      const codecStreams = codec.backend === 'cuda' ? settings.lanes : 0;
      memory = {
        config: model.config,
        prefillChunk: model.prefillChunk,
        codecStreams,
        device: () => deviceLedger(backend),
      };
      return model;
    };
    const engineCodec =
      codec.backend === 'cuda' ? (made: Codec) => lazyCudaEngineCodec(made, settings) : cpuEngineCodec;
    const runtime = await loadCheckpointRuntime(spec.dir, spec.prefillChunk, load, engineCodec);
    const notices = [choice.reason, codec.reason, ...(runtime.notices ?? [])];
    return { ...runtime, backend: choice.backend, notices, ...(memory === undefined ? {} : { memory }) };
  } catch (error) {
    if (error instanceof DramaError) throw error;
    throw new DramaError('CHECKPOINT_LOAD_FAILED', `could not load the checkpoint in ${spec.dir}: ${String(error)}`, {
      kind: 'bad_checkpoint',
      param: 'model',
      cause: error,
    });
  }
}

/** The codec alone (for the decode thread): decode only, no reference encode; on CUDA where codec-choice.ts says. */
export async function loadEngineCodec(spec: RuntimeSpec): Promise<EngineCodec> {
  if (spec.kind === 'null') return new NullCodec(spec.codec);
  const choice = codecChoiceOf(spec);
  const codec = await loadCheckpointCodec(spec.dir);
  if (choice.backend === 'cuda') {
    return cudaEngineCodec(codec, { ...DEFAULT_CUDA_CODEC_SETTINGS, precision: choice.precision });
  }
  return cpuEngineCodec(codec);
}
