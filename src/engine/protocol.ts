// Messages between the main thread (HTTP) and the engine (worker thread or in-thread). PCM is mono fp32 at the
// codec's sample rate (44100 Hz), one Float32Array per audio event, transferred (not copied) across threads.
import type { ReferenceInput } from '../model/reference-input.ts';
import type { FinishReason, SamplingSettings } from '../model/types.ts';
import type { SerializedError } from '../threads/serialize-error.ts';
import type { DeviceMemory } from './lane-budget.ts';
import type { ReferenceCacheStats } from './reference-cache.ts';

/** A speech request as the engine sees it, after the HTTP layer has checked types and ranges. */
export interface SpeechJob {
  readonly text: string;
  readonly instructions: string | undefined;
  readonly references: readonly ReferenceInput[];
  readonly sampling: SamplingSettings;
  /** Explicit frame budget: honoured exactly or refused. Undefined: as many as fit, up to the server's limit. */
  readonly maxFrames: number | undefined;
  /** Normalise numbers, dates and units to words (Fish's `normalize`; on for the OpenAI route). */
  readonly normalize: boolean;
  /** Long text is spoken in pieces of at most this many code points. Undefined: the server's default. */
  readonly pieceLength: number | undefined;
}

/** Token and frame counts of one request, as reported in headers and SSE `usage`. */
export interface SpeechUsage {
  readonly inputTokens: number;
  readonly outputFrames: number;
}

/** What an admitted request will cost: reported before any audio. */
export interface Admission {
  readonly inputTokens: number;
  /** Prompt rows P of the largest piece. */
  readonly promptRows: number;
  readonly pieces: number;
  /** Frame budget F granted (explicit max_frames, or what fits up to the server limit). */
  readonly frameBudget: number;
}

/** Limits and facts about the loaded model that /v1/models and admission report. */
export interface EngineInfo {
  readonly modelId: string;
  readonly synthetic: boolean;
  /** Context window C in rows. */
  readonly contextRows: number;
  /** Most frames one request may ask for. */
  readonly maxFrames: number;
  /** Most prompt rows one piece may use (C - 2: one frame and its end must fit; less when a lane holds fewer rows). */
  readonly maxPromptRows: number;
  /** Rows of lane state (prompt + frames + 1 per request) all lanes may hold together. */
  readonly memoryRows: number;
  /** Most rows (prompt + frames + 1) one request may hold: what every lane slot is planned for. */
  readonly rowsPerLane: number;
  /** How lane memory is counted and what is left of it. */
  readonly memory: MemoryInfo;
  /** Input limit in Unicode code points. */
  readonly maxInputCodePoints: number;
  readonly sampleRate: number;
  readonly frameLength: number;
  readonly lanes: number;
  /** The backend the speech model runs on: cpu, cuda, or none (the null runtime of tests). */
  readonly backend: 'cpu' | 'cuda' | 'none';
  /** One-line facts about the checkpoint to print at start. */
  readonly notices: readonly string[];
}

/** Lane memory as /v1/models reports it: in device bytes (cuda) or rows (lane state in host memory). */
export interface MemoryInfo {
  readonly unit: 'device-bytes' | 'rows';
  /** What all lanes may reserve together, in the unit (a request costs its lane's fixed state + rows × per row). */
  readonly laneBudget: number;
  /** Device bytes of a prompt row, of a frame and of a lane's fixed state (device-bytes only). */
  readonly bytesPerPromptRow?: number;
  readonly bytesPerFrame?: number;
  readonly fixedBytesPerLane?: number;
  /** The allocator's cap and the bytes it held once the lanes were planned (device-bytes only). */
  readonly device?: DeviceMemory;
  /** Device bytes kept from the slabs for the rest of the plan, the reference cache and the codec's lanes. */
  readonly setAsideBytes?: number;
}

export type EngineCommand =
  | { readonly type: 'submit'; readonly id: number; readonly job: SpeechJob }
  | { readonly type: 'cancel'; readonly id: number }
  /** A catalog voice was deleted or replaced: drop its reference cache entries. */
  | { readonly type: 'forget-voice'; readonly name: string }
  | { readonly type: 'shutdown' };

export type EngineEvent =
  | { readonly type: 'ready'; readonly info: EngineInfo }
  | { readonly type: 'load-failed'; readonly error: SerializedError }
  | { readonly type: 'admitted'; readonly id: number; readonly admission: Admission }
  /** `codes` are the frames this audio was decoded from: [frames, K] int32, row-major. */
  | {
      readonly type: 'audio';
      readonly id: number;
      readonly pcm: Float32Array;
      readonly frames: number;
      readonly codes: Int32Array;
    }
  | { readonly type: 'finished'; readonly id: number; readonly reason: FinishReason; readonly usage: SpeechUsage }
  | { readonly type: 'failed'; readonly id: number; readonly error: SerializedError }
  /** A cancelled request's lane is released: its storage may be reused. */
  | { readonly type: 'cancelled'; readonly id: number; readonly round: number }
  | { readonly type: 'stats'; readonly stats: EngineStats };

/** Scheduler counters, sent after every round that changed them. */
export interface EngineStats {
  readonly lanesBusy: number;
  readonly waiting: number;
  /** Frame rounds run so far. */
  readonly rounds: number;
  /** Frames generated so far (all requests). */
  readonly frames: number;
  /** Lane memory the running requests hold, in the unit of EngineInfo.memory (absent before the first round). */
  readonly laneMemoryReserved?: number;
  /** The device's allocator ledger after the round (device-bytes only). */
  readonly deviceMemory?: DeviceMemory;
  /** The reference-prefix cache, when on. */
  readonly referenceCache?: ReferenceCacheStats;
  /** Where the frame rounds' wall time went so far (absent before the first round). */
  readonly roundTime?: RoundTime;
}

/**
 * Frame rounds by kind, totals since the engine started: rounds that prefilled prompt rows (and stepped the lanes
 * that were generating) and rounds that only stepped. Wall time on the engine thread, the device's work included
 * (a step reads its frames back).
 */
export interface RoundTime {
  readonly prefillRounds: number;
  readonly prefillRoundMs: number;
  readonly prefillRows: number;
  readonly stepRounds: number;
  readonly stepRoundMs: number;
  /** Lanes stepped, summed over every round: frames drawn plus ends of speech. */
  readonly laneSteps: number;
  /** Of stepRoundMs, the time inside the model's step (the device's work and its read back); the rest is the host's. */
  readonly stepCallMs: number;
  /** The longest such step since the engine started (a step that recorded its graph, or waited on other work). */
  readonly longestStepCallMs: number;
  /** Step graphs the model recorded, and steps it ran without one (model.stepGraphStats), since it was made. */
  readonly stepRecordings: number;
  readonly directSteps: number;
  /** Steps replayed from a recording (in any round), and the device's time in them (model.stepGraphStats). */
  readonly stepReplays: number;
  readonly stepReplayMs: number;
  /** The host's time in the model's steps (model.stepPhases, every round): tables written, work enqueued, read back. */
  readonly stepTablesMs: number;
  readonly stepEnqueueMs: number;
  readonly stepReadBackMs: number;
}

/** Round times before any round. */
export const NO_ROUND_TIME: RoundTime = {
  prefillRounds: 0,
  prefillRoundMs: 0,
  prefillRows: 0,
  stepRounds: 0,
  stepRoundMs: 0,
  laneSteps: 0,
  stepCallMs: 0,
  longestStepCallMs: 0,
  stepRecordings: 0,
  directSteps: 0,
  stepReplays: 0,
  stepReplayMs: 0,
  stepTablesMs: 0,
  stepEnqueueMs: 0,
  stepReadBackMs: 0,
};
