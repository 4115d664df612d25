// Shared value types that flow between text → model → engine → codec. Shape letters: P prompt rows, K codebooks (10).
import type { StepGraphStats } from '../backend/types.ts';

/**
 * The assembled prompt as rows (struct of arrays). Row r is either a text row (codes[r*K..] all -1) or a code row
 * (a reference audio frame) whose backbone input is the frame-row formula of MODEL.md §1 applied to codes[r*K..].
 */
export interface PromptRows {
  /** Vocabulary id of each row: the text token, or for a code row `semantic_begin + code[0]`. [P] */
  readonly tokens: Int32Array;
  /** Codes of each row, -1 on text rows. [P, K] row-major. */
  readonly codes: Int32Array;
  /** Rows [0, referenceRows) are the invariant reference prefix (what the reference cache keys on). */
  readonly referenceRows: number;
}

/** One generated audio frame: code[0..9] (code[0] = main - semantic_begin). [K] */
export type Frame = Int32Array;

export type FinishReason = 'stop' | 'length';

/** Per-request sampling settings; defaults are the release's (MODEL.md §4). */
export interface SamplingSettings {
  readonly seed: number;
  readonly temperature: number;
  readonly topP: number;
  readonly topK: number;
  /** Argmax everywhere: for parity checks only. */
  readonly greedy: boolean;
}

export const DEFAULT_SAMPLING: SamplingSettings = { seed: 0, temperature: 1.0, topP: 0.9, topK: 30, greedy: false };

/** What one lane's next frame came out as: a frame, or end of speech. */
export type FrameOutcome = { readonly end: true } | { readonly end: false; readonly frame: Frame };

/** A frame step queued and not yet collected, over these lanes in this order. */
export interface QueuedStep {
  readonly lanes: readonly Lane[];
}

/** A lane: one request's backbone, tower and sampler state, owned by the model that made it. */
export interface Lane {
  /** Rows consumed so far (prompt rows prefilled plus frames generated). */
  readonly position: number;
}

/** One lane's prompt rows [from, to) within a prefill of several lanes. */
export interface PrefillPart {
  readonly lane: Lane;
  readonly rows: PromptRows;
  readonly from: number;
  readonly to: number;
}

/** What a model plans its lane state for: this many lanes (slots) of this many rows each. */
export interface LaneCapacity {
  readonly lanes: number;
  /** Rows one lane may hold: prompt rows + frames + 1. */
  readonly rowsPerLane: number;
}

/** Where a plan's seconds went: the lane slots, the first prefill and step (which size the scratch, and prepare each
 *  block's weights the first time), and the step recordings made for each batch bucket (none where steps are not
 *  recorded). */
export interface PlanTimes {
  readonly slotSeconds: number;
  readonly firstRunSeconds: number;
  readonly recordings: number;
  readonly recordingSeconds: number;
}

/**
 * The model as the engine drives it (implemented in src/model/; the cpu and cuda backends sit underneath).
 * A frame round calls `step` once over every active lane; new requests are prefilled in chunks between rounds.
 */
export interface SpeechModel {
  /** Model maximum context C, in rows. */
  readonly contextRows: number;
  /** Whether the weights are synthetic (random): then it speaks noise, and every surface says so. */
  readonly synthetic: boolean;
  /**
   * Sizes every lane's state and the step's scratch once (no lane may be live); a model without one needs none.
   * Returns where the plan's time went, where the model measures it.
   */
  plan?(capacity: LaneCapacity): PlanTimes | undefined;
  newLane(sampling: SamplingSettings): Lane;
  /** Prefill prompt rows [from, to) into the lane; callers cut long prompts into chunks. */
  prefill(lane: Lane, rows: PromptRows, from: number, to: number): void;
  /**
   * Prefills several lanes' rows together, in as few calls as the model's prefill chunk allows: each lane ends in
   * exactly the state its own `prefill` would leave. Every part is checked before any row runs; a lane may appear once.
   */
  prefillTogether(parts: readonly PrefillPart[]): void;
  /** One frame for each lane (a frame round). */
  step(lanes: readonly Lane[]): FrameOutcome[];
  /**
   * `step` in two halves: queue the step (each lane continuing from the steps queued for it before, read back or
   * not) and later collect its outcomes, so that a scheduler can queue step t + 1 before it reads step t back.
   * Absent where the model has only `step`.
   */
  enqueueStep?(lanes: readonly Lane[]): QueuedStep;
  collectStep?(queued: QueuedStep): FrameOutcome[];
  /** Whether enqueueStep returns while the device still works on the step (where queueing ahead pays). */
  readonly stepsRunAhead?: boolean;
  /** Step graphs recorded and steps run without one, since the model was made (absent where steps are not graphs). */
  stepGraphStats?(): StepGraphStats | undefined;
  /** Where the host's time in `step` went, totals since the model was made (absent where not measured). */
  stepPhases?(): StepPhases;
  /** Frees the lane's storage. */
  release(lane: Lane): void;
}

/** Milliseconds in a frame step's parts, summed over steps: the call tables queued to the device, the step's work
 * enqueued (a recording launched, or every kernel when there is none), and its frames read back (waiting for the
 * device to finish the step). */
export interface StepPhases {
  readonly tablesMs: number;
  readonly enqueueMs: number;
  readonly readBackMs: number;
}

/** Frames → 44.1 kHz PCM, carried across calls so that chunked decode equals one whole decode sample for sample. */
export interface CodecStream {
  /** Decodes the new frames and returns exactly their samples (frames.length × frame length). */
  push(frames: readonly Frame[]): Float32Array;
  /** Gives back what the stream holds beyond memory (a device lane); the stream is not pushed again. */
  close?(): void;
}
