// Drama 3 as the engine drives it (SpeechModel, src/model/types.ts), written once against the Backend interface.
// Every lane owns a slot of the lane slabs (lane-slabs.ts), sized by plan. A prefill call runs T rows of one lane
// or of several (each lane one sequence of the call, prefill-calls.ts); a frame step is one pass over a batch of
// lanes: pending frame records → backbone (each row at its slot and position) → candidate logits → the sampler op
// draws `main` → the tower draws code[1..9] (each code drawn on the backend feeds the next layer) → the new records
// become the slots' pending rows, and only the B × 11 integers are read back. The tower layers after the one that
// draws the code the next step embeds are the step's tail, queued to run beside the next step (runTail).
// Alignment: prefill runs the backbone and tower over prompt rows [0, P − 1) (tower row t with the codes of row
// t + 1); the last prompt row is the first step's pending record, so every step runs the same ops at position
// P − 1 + frames. Each lane draws with its own settings keyed by (seed, frame, column): a lane gives the same frames
// alone or in a batch, and in any prefill chunking (docs/exactness.md).
import type { Backend, PendingIntegers, Tensor } from '../backend/types.ts';
import { DramaError } from '../errors.ts';
import type { Backbone } from './backbone.ts';
import { BufferPool } from './buffer-pool.ts';
import { CallTableSet } from './call-tables.ts';
import type { CandidateIds } from './candidates.ts';
import { codebookEmbeddingRow, type Drama3Config, type LoadedConfig } from './config.ts';
import { LaneSlabs, type LaneSnapshot } from './lane-slabs.ts';
import { type PrefillSegment, prefillCalls, refuseRepeatedLanes } from './prefill-calls.ts';
import { type Tower, tailInputWidth } from './tower.ts';
import {
  DEFAULT_SAMPLING,
  type FrameOutcome,
  type Lane,
  type LaneCapacity,
  type PlanTimes,
  type PrefillPart,
  type PromptRows,
  type QueuedStep,
  type SamplingSettings,
  type SpeechModel,
  type StepPhases,
} from './types.ts';

/** A step queued by enqueueStep: its lanes' states and its read back, until collectStep takes them. */
interface StepTicket extends QueuedStep {
  readonly states: readonly SlotLane[];
  readonly pending: PendingIntegers;
  collected: boolean;
}

/** Capacity planned at load when the caller plans none. */
export const DEFAULT_LANE_CAPACITY: LaneCapacity = { lanes: 8, rowsPerLane: 4096 };

export type { LaneSnapshot } from './lane-slabs.ts';

class SlotLane implements Lane {
  promptRows = 0;
  promptComplete = false;
  /** Frames read back; a step queued and not yet read back is counted in stepsQueued only. */
  framesGenerated = 0;
  stepsQueued = 0;
  released = false;

  constructor(
    readonly slot: number,
    readonly sampling: SamplingSettings,
  ) {}

  get position(): number {
    return this.promptRows + this.framesGenerated;
  }

  /** The row the next step runs: the last prompt row, then one per step queued before it. */
  get stepPosition(): number {
    return this.promptRows - 1 + this.stepsQueued;
  }

  /** The index of the frame the next step draws. */
  get stepFrame(): number {
    return this.stepsQueued;
  }
}

/** The lane that fills a recorded step's rows past its batch: the planning slot (one past the lanes), at row 0. */
function paddingLane(lanes: number): SlotLane {
  const lane = new SlotLane(lanes, DEFAULT_SAMPLING);
  lane.promptRows = 1;
  lane.promptComplete = true;
  return lane;
}

/** Rows of K/V a lane holds: every prompt row but the last one of a complete prompt (its first step runs it). */
function keyValueRows(lane: SlotLane): number {
  return lane.promptComplete ? lane.promptRows - 1 : lane.promptRows;
}

/** Milliseconds spent per stage since load (the bench reads them); sampler is the `main` draw, tower includes codes. */
export interface StageTimes {
  prefill: number;
  backbone: number;
  tower: number;
  sampler: number;
}

/** What the model holds once planned: slabs, call tables, record buffers and the read-back array. */
interface Planned<B> {
  readonly capacity: LaneCapacity;
  readonly slabs: LaneSlabs<B>;
  readonly tables: CallTableSet<B>;
  /** int32 [chunk, 1 + K]: the records of a prefill call's rows, and of the row after each (the tower's codes). */
  readonly promptRecords: Tensor<B>;
  readonly towerRecords: Tensor<B>;
  readonly stepInput: Tensor<B>;
  readonly stepFrames: Tensor<B>;
  /** The step's tail (the tower layers the next step does not read): its tables, frames and input rows. */
  readonly tailTables: CallTableSet<B>;
  readonly tailFrames: Tensor<B>;
  readonly tailInput: Tensor<B>;
  readonly hostPrompt: Int32Array;
  readonly hostTower: Int32Array;
  readonly freeSlots: number[];
  /** Batch sizes a recorded step runs at (stepBuckets), and the lane that fills a bucket's rows past the batch. */
  readonly buckets: readonly number[];
  readonly padding: SlotLane;
}

/** The batch sizes of recorded steps: the powers of two below the planned lanes, then the planned lanes. */
export function stepBuckets(lanes: number): number[] {
  const buckets: number[] = [];
  for (let size = 1; size < lanes; size *= 2) buckets.push(size);
  buckets.push(lanes);
  return buckets;
}

export class SlotSpeechModel<B> implements SpeechModel {
  readonly config: Drama3Config;
  /** Key paths in config.json that nothing read: the caller reports them once (never fatal). */
  readonly unknownKeys: readonly string[];
  /** config.json sections that were absent and filled in from the full geometry's guesses. */
  readonly defaulted: readonly string[];
  readonly contextRows: number;
  readonly stageTimes: StageTimes = { prefill: 0, backbone: 0, tower: 0, sampler: 0 };
  private readonly phases = { tablesMs: 0, enqueueMs: 0, readBackMs: 0 };
  readonly synthetic: boolean;
  private readonly recordWidth: number;
  /** The first tower layer of a step's tail: the next step's input reads no code it draws (Tower.tailFrom). */
  private readonly tailFrom: number;
  private readonly pool: BufferPool<B>;
  private readonly candidateTable: Tensor<B>;
  /** Mutable state in one object, so that a wrapper made with Object.create shares it with the model. */
  private readonly lanes: { planned: Planned<B> | undefined; live: number } = { planned: undefined, live: 0 };

  constructor(
    loaded: LoadedConfig,
    readonly backend: Backend<B>,
    readonly backbone: Backbone<B>,
    readonly tower: Tower<B>,
    readonly codeEmbeddings: Tensor<B>,
    readonly candidates: CandidateIds,
    readonly prefillChunk: number,
  ) {
    this.config = loaded.config;
    this.unknownKeys = loaded.unknownKeys;
    this.defaulted = loaded.defaulted;
    this.contextRows = this.config.text.maxPositions;
    this.synthetic = this.config.synthetic;
    this.recordWidth = 1 + this.config.audio.codebooks;
    this.tailFrom = tower.tailFrom(this.config.audio.frameEmbeddingCodebook);
    this.pool = new BufferPool(backend);
    this.candidateTable = backend.fromHost('i32', [candidates.ids.length], candidates.ids);
  }

  get capacity(): LaneCapacity {
    return this.lanes.planned?.capacity ?? DEFAULT_LANE_CAPACITY;
  }

  /** Sizes the slabs for `capacity` and every scratch buffer for a step of that many lanes and a prefill chunk. */
  plan(capacity: LaneCapacity): PlanTimes | undefined {
    const current = this.lanes.planned?.capacity;
    if (current?.lanes === capacity.lanes && current.rowsPerLane === capacity.rowsPerLane) return undefined;
    if (this.lanes.live > 0) {
      throw new DramaError('PLAN_WITH_LIVE_LANES', `cannot re-plan while ${this.lanes.live} lanes are live`, {
        kind: 'internal',
      });
    }
    const { lanes, rowsPerLane } = capacity;
    if (!Number.isInteger(lanes) || lanes < 1 || !Number.isInteger(rowsPerLane) || rowsPerLane < 2) {
      throw new DramaError('LANE_CAPACITY_INVALID', `cannot plan ${lanes} lanes of ${rowsPerLane} rows`, {
        kind: 'internal',
      });
    }
    const { backend, recordWidth } = this;
    const started = performance.now();
    this.lanes.planned = undefined;
    const rowsPerSlot = Math.max(rowsPerLane, this.prefillChunk + 1);
    const slabs = new LaneSlabs(backend, this.backbone, this.tower, lanes + 1, rowsPerSlot, recordWidth);
    this.lanes.planned = {
      capacity,
      slabs,
      tables: new CallTableSet(backend, Math.max(this.prefillChunk, lanes), lanes),
      promptRecords: backend.allocate('i32', [this.prefillChunk, recordWidth]),
      towerRecords: backend.allocate('i32', [this.prefillChunk, recordWidth]),
      stepInput: backend.allocate('i32', [lanes, recordWidth]),
      stepFrames: backend.allocate('i32', [lanes, recordWidth]),
      tailTables: new CallTableSet(backend, lanes, lanes),
      tailFrames: backend.allocate('i32', [lanes, recordWidth]),
      tailInput: backend.allocate('bf16', [lanes, tailInputWidth(this.config)]),
      hostPrompt: new Int32Array(this.prefillChunk * recordWidth),
      hostTower: new Int32Array(this.prefillChunk * recordWidth),
      freeSlots: Array.from({ length: lanes }, (_, slot) => lanes - 1 - slot),
      buckets: stepBuckets(lanes),
      padding: paddingLane(lanes),
    };
    return { slotSeconds: (performance.now() - started) / 1000, ...this.sizeScratch(lanes) };
  }

  /**
   * Runs a prefill chunk and a full step on the planning slot, so that every scratch buffer reaches its size; where
   * steps are recorded, then records each bucket's step there, so that serving records none.
   */
  private sizeScratch(lanes: number): Omit<PlanTimes, 'slotSeconds'> {
    const started = performance.now();
    const planned = this.lanes.planned!;
    const slot = planned.slabs.slots - 1;
    const rows = this.prefillChunk + 1;
    const tokens = new Int32Array(rows).fill(this.candidates.semanticBegin);
    const codes = new Int32Array(rows * (this.recordWidth - 1));
    const probe = new SlotLane(slot, { seed: 0, temperature: 1, topP: 0.9, topK: 30, greedy: false });
    this.prefillCall([{ lane: probe, rows: { tokens, codes, referenceRows: 0 }, from: 0, to: rows, count: rows - 1 }]);
    const batch = Array.from({ length: lanes }, () => probe);
    this.runStep(batch, false).wait();
    const recordingStarted = performance.now();
    const recorded = this.backend.captureStep === undefined ? [] : planned.buckets;
    for (const size of recorded) this.runStep(batch.slice(0, size)).wait();
    this.backend.joinTail?.();
    planned.slabs.reset(slot);
    const seconds = (from: number, to: number) => (to - from) / 1000;
    return {
      firstRunSeconds: seconds(started, recordingStarted),
      recordings: recorded.length,
      recordingSeconds: seconds(recordingStarted, performance.now()),
    };
  }

  private ready(): Planned<B> {
    if (this.lanes.planned === undefined) this.plan(DEFAULT_LANE_CAPACITY);
    return this.lanes.planned!;
  }

  newLane(sampling: SamplingSettings): SlotLane {
    const planned = this.ready();
    const slot = planned.freeSlots.pop();
    if (slot === undefined) {
      throw new DramaError('LANES_EXHAUSTED', `all ${planned.capacity.lanes} planned lane slots are in use`, {
        kind: 'internal',
      });
    }
    // A step queued ahead may still run the slot's previous lane's tail: the reset waits for it.
    this.backend.joinTail?.();
    planned.slabs.reset(slot);
    this.lanes.live += 1;
    return new SlotLane(slot, sampling);
  }

  prefill(lane: Lane, rows: PromptRows, from: number, to: number): void {
    this.prefillTogether([{ lane, rows, from, to }]);
  }

  prefillTogether(parts: readonly PrefillPart[]): void {
    refuseRepeatedLanes(parts);
    const states = parts.map((part) => this.checkPrefill(part));
    const started = performance.now();
    const owned = parts.map((part, index) => ({ ...part, lane: states[index]! }));
    for (const call of prefillCalls(owned, this.prefillChunk)) this.prefillCall(call);
    this.stageTimes.prefill += performance.now() - started;
  }

  private checkPrefill({ lane, rows, from, to }: PrefillPart): SlotLane {
    const state = this.own(lane);
    const total = rows.tokens.length;
    if (from !== state.promptRows || state.stepsQueued > 0 || to < from || to > total) {
      throw new DramaError(
        'PREFILL_OUT_OF_ORDER',
        `prefill [${from}, ${to}) of ${total} rows does not continue the lane at row ${state.promptRows}`,
        { kind: 'internal' },
      );
    }
    if (to > this.contextRows) {
      throw new DramaError('CONTEXT_EXCEEDED', `${to} rows exceed the model context of ${this.contextRows}`, {
        kind: 'invalid_input',
      });
    }
    return state;
  }

  /** Copies the state of a lane that has been prefilled and has drawn no frame yet. */
  snapshot(lane: Lane): LaneSnapshot<B> {
    const state = this.own(lane);
    this.backend.joinTail?.();
    if (state.stepsQueued > 0) {
      throw new DramaError('SNAPSHOT_AFTER_FRAMES', 'a lane can be snapshot only before its first frame', {
        kind: 'internal',
      });
    }
    return this.ready().slabs.snapshot(state.slot, keyValueRows(state), state.promptRows, state.promptComplete);
  }

  /** Bytes snapshot(lane) would hold now, without taking it. */
  snapshotBytes(lane: Lane): number {
    return this.ready().slabs.snapshotBytes(keyValueRows(this.own(lane)));
  }

  /** Gives a snapshot's storage back (the reference cache dropped it); it must not be restored after. */
  discard(snapshot: LaneSnapshot<B>): void {
    this.backend.release(snapshot.parts);
  }

  /** A new lane holding a copy of the snapshot's state, drawing with `sampling`. */
  restore(snapshot: LaneSnapshot<B>, sampling: SamplingSettings): Lane {
    const lane = this.newLane(sampling);
    try {
      this.ready().slabs.restore(snapshot, lane.slot);
    } catch (error) {
      // A refused restore (a released snapshot) gives its lane back.
      this.release(lane);
      throw error;
    }
    lane.promptRows = snapshot.promptRows;
    lane.promptComplete = snapshot.promptComplete;
    return lane;
  }

  step(lanes: readonly Lane[]): FrameOutcome[] {
    return this.collectStep(this.enqueueStep(lanes));
  }

  /** Whether enqueueStep returns while the device still works on the step (the backend queues work). */
  get stepsRunAhead(): boolean {
    return this.backend.queuesWork;
  }

  /**
   * Queues one frame step over `lanes`, each continuing from the steps queued for it before (whose frames need not
   * have been read back), and starts its read back; collectStep gives its frames.
   */
  enqueueStep(lanes: readonly Lane[]): QueuedStep {
    const states = lanes.map((lane) => this.own(lane));
    for (const state of states) {
      if (!state.promptComplete) {
        throw new DramaError(
          'STEP_BEFORE_PREFILL',
          `step on a lane whose prompt is prefilled to row ${state.promptRows} only`,
          { kind: 'internal' },
        );
      }
    }
    if (new Set(states).size !== states.length) {
      throw new DramaError('STEP_LANE_REPEATED', 'a lane appears twice in one step', { kind: 'internal' });
    }
    const pending = this.runStep(states);
    for (const state of states) state.stepsQueued += 1;
    const queued: StepTicket = { lanes, states, pending, collected: false };
    return queued;
  }

  /** Waits for a queued step and returns each lane's outcome, in the order of its lanes (once per step). */
  collectStep(queued: QueuedStep): FrameOutcome[] {
    const ticket = queued as StepTicket;
    if (ticket.collected || ticket.pending === undefined) {
      throw new DramaError('STEP_COLLECTED', 'a queued step was collected twice', { kind: 'internal' });
    }
    ticket.collected = true;
    const waited = performance.now();
    const readBack = ticket.pending.wait();
    const done = performance.now();
    this.phases.readBackMs += done - waited;
    this.stageTimes.backbone += done - waited;
    const codes = this.recordWidth - 1;
    return ticket.states.map((state, b): FrameOutcome => {
      const start = b * this.recordWidth + 1;
      if (readBack[start]! < 0) return { end: true };
      state.framesGenerated += 1;
      return { end: false, frame: readBack.slice(start, start + codes) };
    });
  }

  stepGraphStats() {
    return this.backend.stepGraphStats?.();
  }

  stepPhases(): StepPhases {
    return { ...this.phases };
  }

  release(lane: Lane): void {
    const state = this.own(lane);
    state.released = true;
    this.lanes.live -= 1;
    this.lanes.planned!.freeSlots.push(state.slot);
  }

  /**
   * One backbone and tower call over the segments' rows (each lane one sequence, its rows [from, from + count)), the
   * tower reading each row with the codes of the row after it; a segment that reaches its prompt's end writes the
   * last row as the lane's pending record instead of running it.
   */
  private prefillCall(segments: readonly PrefillSegment<SlotLane>[]): void {
    const planned = this.lanes.planned!;
    const { backend, recordWidth } = this;
    // The tower slabs and the prompt's tables are also a queued step tail's: a prefill waits for it.
    backend.joinTail?.();
    const hidden = this.config.text.hiddenSize;
    const running = segments.filter((segment) => segment.count > 0);
    const total = running.reduce((sum, segment) => sum + segment.count, 0);
    if (total > 0) {
      let row = 0;
      for (const { rows, from, count } of running) {
        writeRecords(planned.hostPrompt, rows, from, count, recordWidth, row);
        writeRecords(planned.hostTower, rows, from + 1, count, recordWidth, row);
        row += count;
      }
      backend.writeIntegers(planned.promptRecords, 0, planned.hostPrompt.subarray(0, total * recordWidth));
      backend.writeIntegers(planned.towerRecords, 0, planned.hostTower.subarray(0, total * recordWidth));
      const tables = planned.tables.prefill(
        running.map(({ lane, from, count }) => ({ slot: lane.slot, start: from, count })),
      );
      const x = this.pool.get('x', total * hidden);
      const normed = this.pool.get('normed', total * hidden);
      this.embed(backend.viewRows(planned.promptRecords, 0, total), x, total);
      this.backbone.forward(planned.slabs.backbone, tables, x, total, normed);
      this.tower.run(planned.slabs.tower, tables, normed, backend.viewRows(planned.towerRecords, 0, total), total);
    }
    for (const { lane, rows, to } of segments) {
      const last = rows.tokens.length - 1;
      if (to === rows.tokens.length) {
        writeRecords(planned.hostPrompt, rows, last, 1, recordWidth, 0);
        backend.writeIntegers(
          planned.slabs.pending,
          lane.slot * recordWidth,
          planned.hostPrompt.subarray(0, recordWidth),
        );
        lane.promptComplete = true;
      }
      lane.promptRows = to;
    }
  }

  /**
   * One frame step over `lanes` (each at its slot), its read back started: the records [B, 1 + K]. The call tables
   * are queued first, the head's device work (pending records → backbone → sampler → the tower up to tailFrom →
   * pending records; the tail follows in runTail) then goes
   * through the backend's captureStep when it has one (one recorded graph per batch size; `record` false runs it
   * directly, as planning must: it grows scratch), and the records' read back is queued last. Stage times split the
   * step into backbone, sampler and tower only where the work runs directly on a host backend; with captureStep the
   * device work is queued, so the whole step counts as backbone.
   */
  private runStep(lanes: readonly SlotLane[], record = true): PendingIntegers {
    const planned = this.lanes.planned!;
    const { backend, stageTimes } = this;
    const batch = lanes.length;
    if (batch > planned.capacity.lanes) {
      throw new DramaError(
        'BATCH_EXCEEDS_PLAN',
        `a step of ${batch} lanes exceeds the planned ${planned.capacity.lanes}`,
        {
          kind: 'internal',
        },
      );
    }
    const hidden = this.config.text.hiddenSize;
    const started = performance.now();
    const captured = record && backend.captureStep !== undefined;
    // A recorded step runs at its bucket: rows past the batch are the padding lane's, on the planning slot.
    const rows = captured ? planned.buckets.find((size) => size >= batch)! : batch;
    const stepLanes = rows > batch ? [...lanes, ...new Array<SlotLane>(rows - batch).fill(planned.padding)] : lanes;
    const tables = planned.tables.step(stepLanes);
    const tablesWritten = performance.now();
    const laneTable = planned.tables.laneTable.data;
    const input = backend.viewRows(planned.stepInput, 0, rows);
    const frames = backend.viewRows(planned.stepFrames, 0, rows);
    let backboneDone = started;
    let mainDrawn = started;
    const { tailFrom } = this;
    const layers = this.tower.layers.length;
    const normed = this.pool.get('normed', rows * hidden);
    const head = (): void => {
      backend.gatherSlotRecords(planned.slabs.pending, laneTable, input, rows);
      const x = this.pool.get('x', rows * hidden);
      this.embed(input, x, rows);
      this.backbone.forward(planned.slabs.backbone, tables, x, rows, normed);
      const count = this.candidates.ids.length;
      const logits = this.pool.get('logits', rows * count, 'f32');
      this.backbone.candidateLogits(normed, rows, logits);
      backboneDone = performance.now();
      const sampler = { lanes: laneTable, rasWindow: planned.slabs.rasWindow };
      const semanticCount = this.config.audio.semanticCodebookSize;
      backend.sampleMain(logits, count, semanticCount, this.candidateTable, sampler, frames, rows);
      mainDrawn = performance.now();
      const part = { from: 0, to: tailFrom, buffers: 'head' } as const;
      this.tower.run(planned.slabs.tower, tables, normed, frames, rows, { sampler, batch: rows }, part);
      backend.scatterSlotRecords(frames, laneTable, planned.slabs.pending, rows);
    };
    if (captured) backend.captureStep!(`step${rows}`, head);
    else head();
    const pending = tailFrom < layers ? this.runTail(rows, batch, normed, captured) : undefined;
    const read = pending ?? backend.readIntegersLater(planned.stepFrames, 0, batch * this.recordWidth);
    const enqueued = performance.now();
    const { phases } = this;
    phases.tablesMs += tablesWritten - started;
    phases.enqueueMs += enqueued - tablesWritten;
    if (captured) {
      stageTimes.backbone += enqueued - started;
    } else {
      stageTimes.backbone += backboneDone - started;
      stageTimes.sampler += mainDrawn - backboneDone;
      stageTimes.tower += enqueued - mainDrawn;
    }
    return read;
  }

  /**
   * The step's tail: the tower layers from tailFrom, which draw codes the next step's input does not read, queued to
   * run beside the next step's head (Backend.tail). It reads copies of the head's frames, of its last tower output
   * and of the tables, taken once the tail before it is done with them; its frames are read back behind it. Each
   * part's ops and their order are what one step ran before, so no bit changes.
   */
  private runTail(rows: number, batch: number, normed: B, captured: boolean): PendingIntegers {
    const planned = this.lanes.planned!;
    const { backend, recordWidth, tailFrom } = this;
    const width = tailInputWidth(this.config);
    const headOutput = tailFrom === 0 ? normed : this.tower.output(tailFrom - 1, rows, 'head');
    const input = backend.view(planned.tailInput.data, 0, rows * width);
    const frames = backend.viewRows(planned.tailFrames, 0, rows);
    backend.joinTail?.();
    backend.copy(backend.view(planned.stepFrames.data, 0, rows * recordWidth), frames.data, rows * recordWidth);
    backend.copy(headOutput, input, rows * width);
    const tables = planned.tables.copyStep(planned.tailTables, rows);
    const sampler = { lanes: planned.tailTables.laneTable.data, rasWindow: planned.slabs.rasWindow };
    const part = { from: tailFrom, to: this.tower.layers.length, buffers: 'tail' } as const;
    const tail = (): void => {
      this.tower.run(planned.slabs.tower, tables, input, frames, rows, { sampler, batch: rows }, part);
    };
    let read: PendingIntegers | undefined;
    const queue = (): void => {
      if (captured) backend.captureStep!(`tail${rows}`, tail);
      else tail();
      read = backend.readIntegersLater(planned.tailFrames, 0, batch * recordWidth);
    };
    if (backend.tail !== undefined) backend.tail(queue, rows);
    else queue();
    return read!;
  }

  private embed(records: Tensor<B>, out: B, rows: number): void {
    const { audio } = this.config;
    const codebook = audio.frameEmbeddingCodebook;
    const firstRow = codebookEmbeddingRow(audio, codebook, 0);
    const { backend } = this;
    backend.embedRecords(this.backbone.tokenEmbeddings, this.codeEmbeddings, records, codebook, firstRow, out, rows);
  }

  private own(lane: Lane): SlotLane {
    if (!(lane instanceof SlotLane) || lane.released) {
      throw new DramaError('LANE_NOT_LIVE', 'the lane was not made by this model or was released', {
        kind: 'internal',
      });
    }
    return lane;
  }
}

/** Host records of prompt rows [from, from + count) at record `at` of target: (token, code[0..K−1]) each. */
function writeRecords(target: Int32Array, rows: PromptRows, from: number, count: number, width: number, at: number) {
  const codebooks = width - 1;
  for (let r = 0; r < count; r++) {
    const record = (at + r) * width;
    target[record] = rows.tokens[from + r]!;
    target.set(rows.codes.subarray((from + r) * codebooks, (from + r + 1) * codebooks), record + 1);
  }
}
