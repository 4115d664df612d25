// Builds the engine's runtime from a plain description (it crosses into the worker thread as workerData): the null
// runtime for tests, or a checkpoint folder loaded on the backend backend-choice.ts picks (the one place that does).

import { CpuBackend } from '../backend/cpu/backend.ts';
import { CudaBackend } from '../backend/cuda/backend.ts';
import type { CodecPrecision } from '../backend/cuda/ops/codecConv.ts';
import { loadCheckpointCodec } from '../codec/reference.ts';
import { DramaError } from '../errors.ts';
import { type Drama3Config, loadConfig } from '../model/config.ts';
import { loadSpeechModel, type SpeechModelOptions } from '../model/load-model.ts';
import type { StreamedLoadReport } from '../model/streamed-source.ts';
import type { SpeechModel } from '../model/types.ts';
import { createProgress, formatBytes } from '../shared/progress.ts';
import { type BackendName, type BackendProbes, chooseBackend, REAL_PROBES } from './backend-choice.ts';
import { cpuEngineCodec, loadCheckpointRuntime, loadCpuEngineCodec } from './checkpoint-runtime.ts';
import { chooseCodecBackend } from './codec-choice.ts';
import {
  checkpointCodecDeviceBytes,
  cudaCodecSettings,
  cudaEngineCodec,
  DEFAULT_CUDA_CODEC_SETTINGS,
  lazyCudaEngineCodec,
} from './cuda-codec.ts';
import { decodeThreadCodec } from './decode-thread-codec.ts';
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
      /** Show the weights' load as it goes, on stderr (serve); off for tests and embedded use. */
      readonly progress?: boolean;
    };

/** Options of a streamed weight load that shows its progress and reports its rate as a start-up notice. */
function streamedLoad(show: boolean, notices: string[]): SpeechModelOptions {
  const progress = show ? createProgress('loading weights', { unit: 'bytes', rate: true }) : undefined;
  return {
    stream: {
      onProgress: progress && ((done, total) => progress.update(done, total)),
      notice: (message) => notices.push(`weights: ${message}`),
    },
    onStreamed: (report) => {
      progress?.stop();
      notices.push(streamedNotice(report));
    },
    onBuilt: ({ checkSeconds, buildSeconds }) =>
      notices.push(
        `model: config and weights checked in ${checkSeconds.toFixed(2)} s before the stream, built in ${buildSeconds.toFixed(2)} s after it`,
      ),
  };
}

/** One line on how the weights were streamed: bytes, seconds, GB/s, slots, and whether reads bypassed the cache. */
export function streamedNotice(report: StreamedLoadReport): string {
  const rate = report.seconds > 0 ? (report.bytes / report.seconds / 1e9).toFixed(2) : '∞';
  const reads =
    report.bufferedFiles.length === 0
      ? 'O_DIRECT'
      : report.directFiles.length === 0
        ? 'through the page cache'
        : `O_DIRECT for ${report.directFiles.length} files, the page cache for ${report.bufferedFiles.length}`;
  return (
    `weights streamed: ${formatBytes(report.bytes)} in ${report.seconds.toFixed(2)} s (${rate} GB/s) through two ` +
    `${formatBytes(report.slotBytes)} slots, read ${reads}; storage for its ${report.tensors} tensors reserved in ` +
    `${report.reserveSeconds.toFixed(2)} s of that`
  );
}

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

export interface RuntimeLoadOptions {
  /**
   * Told a checkpoint's speech model and where its lane state lives as soon as the model is loaded, while the codec
   * and the tokenizer may still load (the engine plans its lanes then); not told for the null runtime.
   */
  readonly onModel?: (model: SpeechModel, memory: RuntimeMemory | undefined) => void;
  /**
   * Settles once the decode thread's codec is loaded, where that thread decodes: the runtime then holds only the
   * codec's rate and frame (decode-thread-codec.ts), its load timed to this. Absent: the runtime loads the codec.
   */
  readonly decodeThread?: Promise<unknown>;
}

export async function loadRuntime(spec: RuntimeSpec, options: RuntimeLoadOptions = {}): Promise<SpeechRuntime> {
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
    const settings = cudaCodecSettings(codec.precision);
    let memory: RuntimeMemory | undefined;
    const loadNotices: string[] = [];
    const load = async (dir: string, options: { prefillChunk?: number }) => {
      const streamed = { ...options, ...streamedLoad(spec.progress === true, loadNotices) };
      if (choice.backend === 'cpu') return loadSpeechModel(dir, new CpuBackend(), streamed);
      // The step's streams are served first where the codec decodes beside it (DRAMA3_STEP_PRIORITY=normal: not).
      const backend = new CudaBackend({
        streamPriority: process.env.DRAMA3_STEP_PRIORITY === 'normal' ? 'normal' : 'high',
      });
      // The codec's device bytes are counted from its index, so the lane budget is whole when the model is loaded.
      const [model, codecDeviceBytes] = await Promise.all([
        loadSpeechModel(dir, backend, streamed),
        codec.backend === 'cuda' ? checkpointCodecDeviceBytes(dir, settings) : 0,
      ]);
      memory = {
        config: model.config,
        prefillChunk: model.prefillChunk,
        codecStreams: codec.backend === 'cuda' ? settings.lanes : 0,
        codecDeviceBytes,
        device: () => deviceLedger(backend),
      };
      return model;
    };
    const loadCodec =
      options.decodeThread !== undefined
        ? decodeThreadCodec(options.decodeThread)
        : codec.backend === 'cuda'
          ? async (dir: string) => lazyCudaEngineCodec(await loadCheckpointCodec(dir), settings)
          : loadCpuEngineCodec;
    const onModel = (model: SpeechModel) => options.onModel?.(model, memory);
    const runtime = await loadCheckpointRuntime(spec.dir, spec.prefillChunk, load, { loadCodec, onModel });
    const notices = [choice.reason, codec.reason, ...loadNotices, ...(runtime.notices ?? [])];
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
    return cudaEngineCodec(codec, cudaCodecSettings(choice.precision));
  }
  return cpuEngineCodec(codec);
}
