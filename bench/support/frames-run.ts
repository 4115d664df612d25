// The frame bench's measurements on a device backend: the synthetic model built in device memory (timed), planned
// for 64 lanes, each lane prefilled with a short text prompt; then frame steps at batch 1, 8, 32 and 64 (the median
// of timed runs of consecutive steps after warm-up, queued one ahead as the engine queues them, wall clock from the
// first step queued to the last frame read back), a per-kernel profile of one step at the smallest and largest batch, prefill of 256 and 4096 rows
// (one backbone call each), and device memory after the build and after the plan.
import { CudaBackend } from '../../src/backend/cuda/backend.ts';
import type { CudaContext } from '../../src/backend/cuda/context.ts';
import type { CudaBuffer } from '../../src/backend/cuda/tensors.ts';
import type { Backend } from '../../src/backend/types.ts';
import { DramaError } from '../../src/errors.ts';
import {
  FULL_PRESET,
  hybridLayerTypes,
  type ModelPreset,
  makeTextConfig,
  makeTowerConfig,
  SMALL_PRESET,
} from '../../src/model/config.ts';
import type { SlotSpeechModel } from '../../src/model/speech-model.ts';
import type { Lane, PromptRows, QueuedStep, SamplingSettings } from '../../src/model/types.ts';
import type { TensorSpec } from '../../src/model/weights.ts';
import { buildDeviceModel } from '../../src/synth/device-model.ts';
import { median } from './gpu-timing.ts';
import { type LaunchProfile, profileLaunches } from './launch-profile.ts';
import type { CopyBandwidth } from './roofline.ts';

/** The full widths with few layers and experts: every kernel at its real shape, built in seconds. */
const SHORT_PRESET: ModelPreset = {
  text: makeTextConfig({ ...FULL_PRESET.text, layerTypes: hybridLayerTypes(4), experts: 64 }),
  tower: makeTowerConfig({ ...FULL_PRESET.tower, sharedLayers: 1 }),
  audio: FULL_PRESET.audio,
};

export const FRAME_PRESETS: Readonly<Record<string, ModelPreset>> = {
  full: FULL_PRESET,
  short: SHORT_PRESET,
  small: SMALL_PRESET,
};

export interface FramesOptions {
  readonly preset: string;
  readonly seed: number;
  readonly lanes: number;
  readonly batches: readonly number[];
  readonly promptRows: number;
  readonly warmupSteps: number;
  readonly stepsPerRun: number;
  readonly runs: number;
  readonly prefillRows: readonly number[];
  readonly prefillRuns: number;
  /**
   * Open the profiler range (cuProfilerStart … Stop) around one recorded step at the first and last batch, for a
   * kernel profiler run with `--profile-from-start off` (ncu's per-kernel durations inside the graph).
   */
  readonly profilerRange?: boolean;
  /**
   * Rows each lane is planned for, where more than the run needs (absent: what it needs). Serving plans lanes for
   * what the device holds, tens of thousands of rows, and kernels sized by the plan's capacity then cost more.
   */
  readonly rowsPerLane?: number;
}

export const DEFAULT_FRAMES_OPTIONS: FramesOptions = {
  preset: 'full',
  seed: 20261201,
  lanes: 64,
  batches: [1, 8, 32, 64],
  promptRows: 16,
  warmupSteps: 5,
  stepsPerRun: 20,
  runs: 5,
  prefillRows: [256, 4096],
  prefillRuns: 3,
};

export interface BatchResult {
  readonly batch: number;
  readonly stepMilliseconds: number;
  readonly runMilliseconds: readonly number[];
  readonly framesPerSecond: number;
  /** Lane 0's position in the middle of the timed runs (for the state bytes). */
  readonly position: number;
  /** Distinct semantic codes drawn and streams ended: a model gone non-finite draws one value or ends at once. */
  readonly distinctMain: number;
  readonly ended: number;
  /** FNV-1a of every frame drawn in the warm-up and timed steps: equal across runs whose draws are bit-identical. */
  readonly drawDigest: string;
  /** The step's recorded graph replayed back to back without the host's part of a step (undefined: none held). */
  readonly replay?: GraphReplay;
}

export interface GraphReplay {
  /** Wall clock per replay of back-to-back launches, then one synchronise: the device's time for a step. */
  readonly stepMilliseconds: number;
  /** Host time of one graph launch call. */
  readonly launchMicroseconds: number;
}

export interface PrefillResult {
  readonly rows: number;
  readonly milliseconds: number;
  readonly rowsPerSecond: number;
  /** One more prefill of these rows with an event between launches: where its time goes (shares, not the sum). */
  readonly profile: LaunchProfile;
}

export interface MemoryPoint {
  /** Bytes the allocator has handed out. */
  readonly allocatorBytes: number;
  /** Device bytes in use by the process, from the driver. */
  readonly driverBytes: number;
}

export interface FramesMeasurements {
  readonly options: FramesOptions;
  readonly copy: CopyBandwidth;
  readonly buildSeconds: number;
  readonly planSeconds: number;
  readonly rowsPerLane: number;
  readonly memory: { readonly start: MemoryPoint; readonly built: MemoryPoint; readonly planned: MemoryPoint };
  readonly batches: readonly BatchResult[];
  readonly profiles: readonly { readonly batch: number; readonly profile: LaunchProfile }[];
  readonly prefill: readonly PrefillResult[];
  readonly model: SlotSpeechModel<CudaBuffer>;
  readonly specs: readonly TensorSpec[];
  readonly release: () => void;
}

function memoryPoint(cuda: CudaContext): MemoryPoint {
  const info = cuda.driver.memoryInfo();
  return { allocatorBytes: cuda.memory.usage('device').usedBytes, driverBytes: info.totalBytes - info.freeBytes };
}

/** A text prompt of `rows` rows (codes −1), tokens spread over the vocabulary below the candidate ids. */
export function textPrompt(rows: number, codebooks: number, seed: number, vocabularyTop: number): PromptRows {
  const tokens = Int32Array.from({ length: rows }, (_, row) => (seed * 7919 + row * 104729) % vocabularyTop);
  return { tokens, codes: new Int32Array(rows * codebooks).fill(-1), referenceRows: 0 };
}

export function sampling(seed: number): SamplingSettings {
  return { seed, temperature: 0.8, topP: 0.9, topK: 30, greedy: false };
}

const log = (line: string) => console.log(line);

/**
 * The model stepping without its backend's recorded graphs, so that every launch is seen (the profile): a wrapper
 * sharing the model's state (speech-model.ts keeps it in one object for this) whose backend lacks captureStep and
 * tail.
 */
export function directSteps<B>(model: SlotSpeechModel<B>): SlotSpeechModel<B> {
  model.backend.joinTail?.();
  // Without tail(), a step's tail runs where it is queued: one stream, so that the events between launches order them.
  const backend = Object.create(model.backend, {
    captureStep: { value: undefined },
    tail: { value: undefined },
    joinTail: { value: undefined },
  });
  return Object.create(model, { backend: { value: backend } });
}

/**
 * The step's recorded graphs (its head, and its tail where it has one) launched `launches` times back to back and
 * waited for once: what the device takes per step
 * when the host's part (the lane table upload, the read back, JavaScript) is out of the way. Replays write the same
 * positions again and advance the lanes' recurrent state and the codes each lane's next step reads: a later batch's
 * time does not depend on that, but its draws do (a batch's draw digest covers the run's whole sequence, the replays
 * of the batches before it included).
 */
export function replayGraph(cuda: CudaContext, backend: Backend<CudaBuffer>, batch: number, launches: number) {
  if (backend.captureStep === undefined) return undefined;
  const key = `step${batch}`;
  const tailKey = `tail${batch}`;
  const refuse = () => {
    throw new DramaError('FRAMES_GRAPH_NOT_HELD', `no recording held for ${key}`, { kind: 'internal' });
  };
  // A step's tail, where it has one, runs beside the next step's head as the model queues it (speech-model.ts).
  const tailHeld = backend instanceof CudaBackend && backend.graphs.has(tailKey);
  const launch = () => {
    backend.captureStep!(key, refuse);
    if (!tailHeld) return;
    backend.joinTail!();
    backend.tail!(() => backend.captureStep!(tailKey, refuse), batch);
  };
  try {
    launch();
    cuda.synchronize();
    const started = performance.now();
    for (let index = 0; index < launches; index++) launch();
    const launched = performance.now();
    cuda.synchronize();
    const finished = performance.now();
    return {
      stepMilliseconds: (finished - started) / launches,
      launchMicroseconds: ((launched - started) * 1000) / launches,
    };
  } catch (error) {
    // Only a missing recording means "no figure"; a device error is the bench's to report.
    if (error instanceof DramaError && error.code === 'FRAMES_GRAPH_NOT_HELD') return undefined;
    throw error;
  }
}

/** Everything but the copy bandwidth, which the caller measures first (bench/support/roofline.ts). */
export async function measureFrames(
  cuda: CudaContext,
  backend: Backend<CudaBuffer>,
  options: FramesOptions,
  copy: CopyBandwidth,
): Promise<FramesMeasurements> {
  const preset = FRAME_PRESETS[options.preset];
  if (preset === undefined) {
    throw new DramaError(
      'FRAMES_PRESET_UNKNOWN',
      `unknown preset ${options.preset}: ${Object.keys(FRAME_PRESETS).join(', ')}`,
      {
        kind: 'invalid_input',
      },
    );
  }
  const start = memoryPoint(cuda);
  const buildStarted = performance.now();
  let lastPrint = buildStarted;
  const { model, specs, weights } = await buildDeviceModel(cuda, backend, preset, {
    seed: options.seed,
    prefillChunk: Math.max(...options.prefillRows),
    onProgress: (done, total) => {
      const now = performance.now();
      if (now - lastPrint < 2000 && done.tensors < total.tensors) return;
      lastPrint = now;
      const seconds = ((now - buildStarted) / 1000).toFixed(1);
      log(
        `weights: ${(done.bytes / 1e9).toFixed(2)} of ${(total.bytes / 1e9).toFixed(2)} GB, ` +
          `${done.tensors} of ${total.tensors} tensors, ${seconds} s`,
      );
    },
  });
  const buildSeconds = (performance.now() - buildStarted) / 1000;
  const built = memoryPoint(cuda);
  log(`model built in device memory in ${buildSeconds.toFixed(1)} s`);

  const framesPerLane = options.batches.length * (options.warmupSteps + options.runs * options.stepsPerRun + 1);
  const rowsPerLane = Math.max(options.rowsPerLane ?? 0, options.promptRows + framesPerLane + 8);
  const planStarted = performance.now();
  model.plan({ lanes: options.lanes, rowsPerLane });
  cuda.synchronize();
  const planSeconds = (performance.now() - planStarted) / 1000;
  const planned = memoryPoint(cuda);
  log(
    `planned ${options.lanes} lanes of ${rowsPerLane} rows (prefill chunk ${model.prefillChunk}) in ${planSeconds.toFixed(1)} s`,
  );

  const codebooks = model.config.audio.codebooks;
  const vocabularyTop = model.candidates.imEnd;
  const lanes: Lane[] = [];
  for (let index = 0; index < options.lanes; index++) {
    const lane = model.newLane(sampling(options.seed + index));
    const prompt = textPrompt(options.promptRows, codebooks, index, vocabularyTop);
    model.prefill(lane, prompt, 0, options.promptRows);
    lanes.push(lane);
  }
  cuda.synchronize();
  log(`prefilled ${options.lanes} lanes with ${options.promptRows} prompt rows each`);

  const batches: BatchResult[] = [];
  const profiles: { batch: number; profile: LaunchProfile }[] = [];
  for (const batch of options.batches) {
    const group = lanes.slice(0, batch);
    const drawn = new Set<number>();
    let ended = 0;
    const digest = new FrameDigest();
    // Steps queued one ahead, as the engine queues them: step t + 1 is queued before step t's frames are read.
    let queued: QueuedStep | undefined;
    const collect = () => {
      if (queued === undefined) return;
      for (const outcome of model.collectStep(queued)) {
        digest.add(outcome.end ? [-1] : outcome.frame);
        if (outcome.end) ended += 1;
        else drawn.add(outcome.frame[0]!);
      }
      queued = undefined;
    };
    const step = () => {
      const next = model.enqueueStep(group);
      collect();
      queued = next;
    };
    for (let index = 0; index < options.warmupSteps; index++) step();
    collect();
    const runMilliseconds: number[] = [];
    let position = 0;
    for (let run = 0; run < options.runs; run++) {
      if (run === Math.floor(options.runs / 2)) position = group[0]!.position;
      const started = performance.now();
      for (let index = 0; index < options.stepsPerRun; index++) step();
      collect();
      runMilliseconds.push(performance.now() - started);
    }
    const runTime = median(runMilliseconds);
    const stepMilliseconds = runTime / options.stepsPerRun;
    const framesPerSecond = (batch * options.stepsPerRun) / (runTime / 1000);
    const replay = replayGraph(cuda, backend, batch, options.stepsPerRun);
    batches.push({
      batch,
      stepMilliseconds,
      runMilliseconds,
      framesPerSecond,
      position,
      distinctMain: drawn.size,
      ended,
      drawDigest: digest.hex(),
      replay,
    });
    const replayed = replay
      ? `; its graph alone ${replay.stepMilliseconds.toFixed(2)} ms a replay (launch call ${replay.launchMicroseconds.toFixed(0)} µs)`
      : '';
    log(
      `batch ${batch}: ${stepMilliseconds.toFixed(2)} ms per step, ${framesPerSecond.toFixed(1)} frames/s${replayed}; draws ${digest.hex()}`,
    );
    if (options.profilerRange && (batch === options.batches[0] || batch === options.batches.at(-1))) {
      cuda.synchronize();
      cuda.driver.profilerRange(true);
      step();
      collect();
      cuda.synchronize();
      cuda.driver.profilerRange(false);
    }
    if (batch === options.batches[0] || batch === options.batches.at(-1)) {
      const direct = directSteps(model);
      profiles.push({ batch, profile: profileLaunches(cuda, () => direct.step(group)) });
    }
  }
  // Lane 0 ran every step: its rows must have stayed inside the planned slabs.
  if (lanes[0]!.position >= rowsPerLane) {
    throw new DramaError(
      'FRAMES_PLAN_TOO_SHORT',
      `lane 0 reached row ${lanes[0]!.position} of ${rowsPerLane} planned`,
      {
        kind: 'internal',
      },
    );
  }
  for (const lane of lanes) model.release(lane);

  const prefill: PrefillResult[] = [];
  for (const rows of options.prefillRows) {
    const times: number[] = [];
    for (let run = 0; run < options.prefillRuns; run++) {
      const lane = model.newLane(sampling(run));
      // rows + 1 prompt rows: the backbone and tower run exactly `rows` of them; the last becomes the pending row.
      const prompt = textPrompt(rows + 1, codebooks, 1000 + run, vocabularyTop);
      cuda.synchronize();
      const started = performance.now();
      model.prefill(lane, prompt, 0, rows + 1);
      cuda.synchronize();
      times.push(performance.now() - started);
      model.release(lane);
    }
    const milliseconds = median(times);
    const lane = model.newLane(sampling(0));
    const prompt = textPrompt(rows + 1, codebooks, 1000, vocabularyTop);
    cuda.synchronize();
    const profile = profileLaunches(cuda, () => model.prefill(lane, prompt, 0, rows + 1));
    model.release(lane);
    prefill.push({ rows, milliseconds, rowsPerSecond: rows / (milliseconds / 1000), profile });
    log(`prefill ${rows} rows: ${milliseconds.toFixed(1)} ms, ${(rows / (milliseconds / 1000)).toFixed(0)} rows/s`);
  }
  return {
    options,
    copy,
    buildSeconds,
    planSeconds,
    rowsPerLane,
    memory: { start, built, planned },
    batches,
    profiles,
    prefill,
    model,
    specs,
    release: () => weights.release(),
  };
}

/** A 32-bit FNV-1a over the drawn frames' integers, to compare two runs' draws without keeping them. */
class FrameDigest {
  private hash = 0x811c9dc5;

  add(values: ArrayLike<number>): void {
    for (let index = 0; index < values.length; index++) {
      let value = values[index]! | 0;
      for (let byte = 0; byte < 4; byte++) {
        this.hash = Math.imul(this.hash ^ (value & 0xff), 0x01000193) >>> 0;
        value >>>= 8;
      }
    }
  }

  hex(): string {
    return this.hash.toString(16).padStart(8, '0');
  }
}
