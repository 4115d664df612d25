// Frame rounds over up to `lanes` active requests. Each round: settle cancellations, give free lanes to waiting
// requests, prefill one chunk of each lane still reading its prompt (all of them in one joint prefill, which the
// model packs into as few calls as it can), then one model step over every lane that is generating. Frames go to
// the decoder in groups that grow 1 → 4 → 8 → 16 so that the first audio leaves after one frame; every request that
// reached the decoder ends through it, so its terminal event follows its audio.
// Look-ahead (where the model's steps run ahead of the host, as on cuda): while every active lane is generating and
// no waiting request could take a lane, the next round's step is queued before this round's is read back, so the
// device goes from one step to the next without waiting for the host's work between them. A lane's frames do not
// change: each step is the one it would run anyway, and a lane's step reads only its own slot (docs/exactness.md).
import type { Frame, FrameOutcome, Lane, QueuedStep } from '../model/types.ts';
import { serializeError } from '../threads/serialize-error.ts';
import { type FrameDecoder, InlineFrameDecoder, type TerminalEvent } from './frame-decoder.ts';
import { type DeviceMemory, type LaneBudget, poolCost, requestCost } from './lane-budget.ts';
import { checkLanes } from './lane-plan.ts';
import { type Admission, type EngineEvent, NO_ROUND_TIME, type RoundTime } from './protocol.ts';
import type { ReferenceCache } from './reference-cache.ts';
import { ReferencePrefill } from './reference-prefill.ts';
import type { BuiltPrompt, SpeechRuntime } from './runtime.ts';

/** Decode group sizes, in order; the last repeats. */
const DECODE_GROUPS = [1, 4, 8, 16] as const;

export interface SchedulerOptions {
  readonly lanes: number;
  /** Prompt rows prefilled into one lane between two rounds. */
  readonly prefillChunk: number;
  /** Restores lanes at the end of a known reference prefix; absent: every prompt is prefilled whole. */
  readonly referenceCache?: ReferenceCache;
  /** Frames → audio events; absent: the runtime's codec in this thread. */
  readonly decoder?: FrameDecoder;
  /** Lane memory all active requests may reserve together; a request waits until its cost fits. Absent: lanes only. */
  readonly budget?: LaneBudget;
  /** The device's allocator ledger, reported with each round's stats (absent: lane state is in host memory). */
  readonly deviceMemory?: () => DeviceMemory;
  /** The model's lanes are planned for this budget already (lane-plan.ts); absent: the scheduler plans them. */
  readonly lanesPlanned?: boolean;
  /** Queue the next round's step before reading this one back (default: where the model's steps run ahead). */
  readonly lookAhead?: boolean;
}

/** A step for these requests' lanes (the lane each request held then): queued, or run with its outcomes. */
interface RoundStep {
  readonly entries: readonly { readonly state: RequestState; readonly lane: Lane }[];
  readonly queued?: QueuedStep;
  readonly outcomes?: readonly FrameOutcome[];
}

/** A request that passed admission: its prompt pieces and budgets. */
export interface PreparedRequest {
  readonly id: number;
  readonly pieces: readonly BuiltPrompt[];
  readonly sampling: import('../model/types.ts').SamplingSettings;
  readonly admission: Admission;
  /** Catalog voices the references come from. */
  readonly voices?: readonly string[];
}

class RequestState {
  pieceIndex = 0;
  lane: Lane | null = null;
  prefilled = 0;
  frames = 0;
  groups = 0;
  pending: Frame[] = [];
  cancelled = false;
  /** The snapshot this request put in the reference cache, until a step confirms the device ran its prefill. */
  unconfirmedSnapshot: unknown = undefined;
  constructor(readonly request: PreparedRequest) {}

  /** Rows of lane memory it may use: its largest prompt, its frame budget and the end row. */
  get rows(): number {
    return this.request.admission.promptRows + this.request.admission.frameBudget + 1;
  }

  get piece(): BuiltPrompt {
    return this.request.pieces[this.pieceIndex]!;
  }

  get generating(): boolean {
    return this.lane !== null && this.prefilled === this.piece.rows.tokens.length;
  }
}

export class Scheduler {
  private readonly waiting: RequestState[] = [];
  private readonly active: RequestState[] = [];
  private readonly referencePrefill: ReferencePrefill;
  private readonly decoder: FrameDecoder;
  /** Lane memory the active requests hold, in the budget's unit. */
  private reserved = 0;
  /** What one request's rows cost in the budget's unit. */
  private readonly cost: (rows: number) => number;
  private readonly pool: number;
  rounds = 0;
  frames = 0;
  private roundTime: RoundTime | undefined;
  /** The step queued by the last round's look-ahead, read back in this round. */
  private inFlight: RoundStep | undefined;
  private readonly lookAhead: boolean;

  constructor(
    private readonly runtime: SpeechRuntime,
    private readonly options: SchedulerOptions,
    private readonly emit: (event: EngineEvent) => void,
  ) {
    this.decoder = options.decoder ?? new InlineFrameDecoder(runtime.codec, emit);
    checkLanes(options.lanes);
    this.referencePrefill = new ReferencePrefill(runtime.model, options.referenceCache);
    const { budget } = options;
    this.cost = budget === undefined ? () => 0 : (rows) => requestCost(budget, rows);
    this.pool = budget === undefined ? 0 : poolCost(budget);
    // Every slot can hold any request admission lets in; the reservation below keeps the lanes within the budget.
    const capacity = { lanes: options.lanes, rowsPerLane: budget?.rowsPerLane ?? runtime.model.contextRows };
    if (options.lanesPlanned !== true) runtime.model.plan?.(capacity);
    const { model } = runtime;
    const canQueue = model.enqueueStep !== undefined && model.collectStep !== undefined;
    this.lookAhead = canQueue && (options.lookAhead ?? model.stepsRunAhead === true);
  }

  get lanesBusy(): number {
    return this.active.length;
  }

  get waitingCount(): number {
    return this.waiting.length;
  }

  hasWork(): boolean {
    return this.active.length > 0 || this.waiting.length > 0;
  }

  enqueue(request: PreparedRequest): void {
    this.waiting.push(new RequestState(request));
    this.decoder.open(request.id);
  }

  /** A waiting request leaves at once; an active one is settled (lane released) at the start of the next round. */
  cancel(id: number): void {
    const index = this.waiting.findIndex((state) => state.request.id === id);
    if (index >= 0) {
      this.waiting.splice(index, 1);
      this.decoder.drop(id);
      this.emit({ type: 'cancelled', id, round: this.rounds });
      return;
    }
    const state = this.active.find((candidate) => candidate.request.id === id);
    if (state !== undefined) state.cancelled = true;
  }

  runRound(): void {
    const started = performance.now();
    for (const state of this.active.filter((candidate) => candidate.cancelled)) {
      this.retire(state);
      this.decoder.drop(state.request.id);
      this.emit({ type: 'cancelled', id: state.request.id, round: this.rounds });
    }
    while (this.canAdmit()) {
      const state = this.waiting.shift()!;
      this.active.push(state);
      this.reserved += this.cost(state.rows);
      this.guard([state], () => this.openLane(state));
    }
    const prefilling = this.active.filter((candidate) => candidate.lane !== null && !candidate.generating);
    const prefillRows = prefilling.length > 0 ? this.prefillPieces(prefilling) : 0;
    const generating = this.active.filter((state) => state.generating);
    const stepStarted = performance.now();
    const stepped = this.stepRound(generating);
    const stepCallMs = stepped > 0 ? performance.now() - stepStarted : 0;
    this.rounds += 1;
    this.countRound(performance.now() - started, prefillRows, stepped, stepCallMs);
    this.emitStats();
  }

  /** Whether the first waiting request fits beside the active ones (a lane and its rows under the budget). */
  private canAdmit(): boolean {
    const next = this.waiting[0];
    return (
      next !== undefined && this.active.length < this.options.lanes && this.reserved + this.cost(next.rows) <= this.pool
    );
  }

  /**
   * This round's step: the one queued last round (lanes that joined since wait for the next), or one queued now; the
   * next round's queued first where look-ahead holds. Returns the lanes stepped.
   */
  private stepRound(generating: readonly RequestState[]): number {
    let current = this.inFlight;
    this.inFlight = undefined;
    if (current === undefined && generating.length > 0) current = this.queueStep(generating);
    if (current === undefined) return 0;
    // Not while a lane reads its prompt or a waiting request could take a lane now: their prefill would queue behind
    // the step queued ahead. A request waiting for a lane to end gets one a step later than it would without.
    if (this.lookAhead && !this.canAdmit() && this.active.every((state) => state.generating)) {
      // A lane that reaches its frame budget in the current step has no next step; one that ends its speech there
      // runs one step more, on its own slot, before its lane is released: nothing another lane reads.
      const inCurrent = new Set(current.entries.map((entry) => entry.state));
      const next = generating.filter(
        (state) => state.frames + (inCurrent.has(state) ? 1 : 0) < state.request.admission.frameBudget,
      );
      if (next.length > 0) this.inFlight = this.queueStep(next);
    }
    this.collect(current);
    return current.entries.length;
  }

  /** Queues a step over the requests' lanes; a failure fails them (undefined then). */
  private queueStep(states: readonly RequestState[]): RoundStep | undefined {
    let step: RoundStep | undefined;
    this.guard(states, () => {
      const entries = states.map((state) => ({ state, lane: state.lane! }));
      const lanes = entries.map((entry) => entry.lane);
      const { model } = this.runtime;
      step = this.lookAhead ? { entries, queued: model.enqueueStep!(lanes) } : { entries, outcomes: model.step(lanes) };
    });
    return step;
  }

  /** Reads a step back and gives each request still holding the lane it was queued for its outcome. */
  private collect(step: RoundStep): void {
    const states = step.entries.map((entry) => entry.state);
    this.guard(states, () => {
      const outcomes = step.outcomes ?? this.runtime.model.collectStep!(step.queued!);
      step.entries.forEach(({ state, lane }, index) => {
        // Cancelled, failed or on its next piece since the step was queued: the outcome is nobody's.
        if (state.lane !== lane || !this.active.includes(state)) return;
        // The step's read back waited for every prefill queued before it: the snapshot held good state.
        state.unconfirmedSnapshot = undefined;
        const outcome = outcomes[index]!;
        if (outcome.end) this.endPiece(state);
        else this.addFrame(state, outcome.frame);
      });
    });
  }

  private countRound(ms: number, prefillRows: number, laneSteps: number, stepCallMs: number): void {
    const last = this.roundTime ?? NO_ROUND_TIME;
    const prefilled = prefillRows > 0;
    const stepOnly = !prefilled && laneSteps > 0;
    const graphs = this.runtime.model.stepGraphStats?.();
    const phases = this.runtime.model.stepPhases?.();
    this.roundTime = {
      prefillRounds: last.prefillRounds + (prefilled ? 1 : 0),
      prefillRoundMs: last.prefillRoundMs + (prefilled ? ms : 0),
      prefillRows: last.prefillRows + prefillRows,
      stepRounds: last.stepRounds + (stepOnly ? 1 : 0),
      stepRoundMs: last.stepRoundMs + (stepOnly ? ms : 0),
      laneSteps: last.laneSteps + laneSteps,
      stepCallMs: last.stepCallMs + (stepOnly ? stepCallMs : 0),
      longestStepCallMs: Math.max(last.longestStepCallMs, stepCallMs),
      stepRecordings: graphs?.recorded ?? 0,
      directSteps: graphs?.direct ?? 0,
      stepReplays: graphs?.replays ?? 0,
      stepReplayMs: graphs?.replayMs ?? 0,
      stepTablesMs: phases?.tablesMs ?? 0,
      stepEnqueueMs: phases?.enqueueMs ?? 0,
      stepReadBackMs: phases?.readBackMs ?? 0,
    };
  }

  /** Drops the reference cache entries built from a catalog voice (reported at once: no round may follow). */
  forgetVoice(name: string): void {
    this.options.referenceCache?.forgetVoice(name);
    this.emitStats();
  }

  private emitStats(): void {
    this.emit({
      type: 'stats',
      stats: {
        lanesBusy: this.active.length,
        waiting: this.waiting.length,
        rounds: this.rounds,
        frames: this.frames,
        laneMemoryReserved: this.reserved,
        deviceMemory: this.options.deviceMemory?.(),
        referenceCache: this.options.referenceCache?.stats(),
        roundTime: this.roundTime,
      },
    });
  }

  /** Releases every lane (engine shutdown). */
  releaseAll(): void {
    // A step still queued writes only its lanes' slots; the backend's close waits for it.
    this.inFlight = undefined;
    for (const state of [...this.active, ...this.waiting]) {
      this.retire(state);
      this.decoder.drop(state.request.id);
    }
    this.waiting.length = 0;
    this.options.referenceCache?.close();
  }

  private openLane(state: RequestState): void {
    const opened = this.referencePrefill.open(state.piece.rows, state.request.sampling);
    state.lane = opened.lane;
    state.prefilled = opened.prefilled;
  }

  /**
   * One piece of each lane's prompt (up to the next chunk boundary or the snapshot row), all in one joint prefill:
   * the model packs them into as few calls as its chunk allows. A failure there fails every request it held.
   * Returns the rows it prefilled.
   */
  private prefillPieces(states: readonly RequestState[]): number {
    const pieces = states.map((state) => ({
      state,
      to: this.referencePrefill.nextCut(state.piece.rows, state.prefilled, this.options.prefillChunk),
    }));
    const rows = pieces.reduce((sum, { state, to }) => sum + to - state.prefilled, 0);
    this.guard(states, () =>
      this.runtime.model.prefillTogether(
        pieces.map(({ state, to }) => ({ lane: state.lane!, rows: state.piece.rows, from: state.prefilled, to })),
      ),
    );
    for (const { state, to } of pieces) {
      if (!this.active.includes(state)) continue;
      state.prefilled = to;
      this.guard([state], () => {
        const stored = this.referencePrefill.prefilledTo(state.lane!, state.piece.rows, to, state.request.voices ?? []);
        if (stored !== undefined) state.unconfirmedSnapshot = stored;
      });
    }
    return rows;
  }

  private addFrame(state: RequestState, frame: Frame): void {
    state.pending.push(frame);
    state.frames += 1;
    this.frames += 1;
    if (state.frames >= state.request.admission.frameBudget) {
      this.finish(state, 'length');
      return;
    }
    const groupSize = DECODE_GROUPS[Math.min(state.groups, DECODE_GROUPS.length - 1)]!;
    if (state.pending.length >= groupSize) this.flush(state);
  }

  /** End of speech for this piece: the next piece gets a fresh lane, or the request is done. */
  private endPiece(state: RequestState): void {
    if (state.pieceIndex + 1 >= state.request.pieces.length) {
      this.finish(state, 'stop');
      return;
    }
    this.runtime.model.release(state.lane!);
    state.lane = null;
    state.pieceIndex += 1;
    this.openLane(state);
  }

  private flush(state: RequestState): void {
    if (state.pending.length === 0) return;
    this.decoder.decode(state.request.id, state.pending);
    state.pending = [];
    state.groups += 1;
  }

  private finish(state: RequestState, reason: 'stop' | 'length'): void {
    this.flush(state);
    this.retire(state);
    const usage = { inputTokens: state.request.admission.inputTokens, outputFrames: state.frames };
    this.decoder.end({ type: 'finished', id: state.request.id, reason, usage });
  }

  private retire(state: RequestState): void {
    // Being in the active list is what holds the reserved rows.
    const index = this.active.indexOf(state);
    if (index >= 0) {
      this.active.splice(index, 1);
      this.reserved -= this.cost(state.rows);
    }
    if (state.lane !== null) this.runtime.model.release(state.lane);
    state.lane = null;
  }

  /** A device fault surfaces at the next synchronisation, which may follow the copy: a failed request's entry goes. */
  private forgetUnconfirmed(state: RequestState): void {
    const snapshot = state.unconfirmedSnapshot;
    state.unconfirmedSnapshot = undefined;
    if (snapshot === undefined) return;
    try {
      this.options.referenceCache?.forgetSnapshot(snapshot);
    } catch {
      // The entry is out of the cache already; its storage goes with the failed device.
    }
  }

  /** A failure inside the model fails the requests it touched; the others keep running. */
  private guard(states: readonly RequestState[], work: () => void): void {
    try {
      work();
    } catch (error) {
      for (const state of states) {
        if (!this.active.includes(state)) continue;
        this.forgetUnconfirmed(state);
        try {
          this.retire(state);
        } catch {
          // The lane's storage is already gone with the failure; the request is reported failed below.
        }
        const failed: TerminalEvent = { type: 'failed', id: state.request.id, error: serializeError(error) };
        this.decoder.end(failed);
      }
    }
  }
}
