// The engine's body, in whichever thread owns the backend: takes commands, admits requests (prompt pieces and
// budgets, refused before any audio), and runs frame rounds while there is work, yielding to the event loop between
// rounds so that cancellations and new requests are taken in at round boundaries.
import { DramaError } from '../errors.ts';
import { pieceTextLimits, type TextLimits } from '../text/limits.ts';
import { serializeError } from '../threads/serialize-error.ts';
import { type AdmissionLimits, checkInputLength, frameBudget } from './admission.ts';
import { type FrameDecoder, InlineFrameDecoder } from './frame-decoder.ts';
import { type DeviceMemory, type LaneBudget, poolCost } from './lane-budget.ts';
import { type LanePlan, planLanes, planNotice } from './lane-plan.ts';
import type { EngineCommand, EngineEvent, EngineInfo, MemoryInfo, SpeechJob } from './protocol.ts';
import { DEFAULT_REFERENCE_CACHE_BYTES, ReferenceCache } from './reference-cache.ts';
import type { SpeechRuntime } from './runtime.ts';
import { type PreparedRequest, Scheduler } from './scheduler.ts';

export interface EngineSettings {
  readonly lanes: number;
  readonly prefillChunk: number;
  /** Most frames one request may ask for. */
  readonly maxFrames: number;
  /** Input limit in Unicode code points. */
  readonly maxInputCodePoints: number;
  /** Long text is spoken in pieces of at most this many code points unless the request says otherwise. */
  readonly pieceLength: number;
  /**
   * Rows of lane state (prompt + frames + 1 per request) all lanes may hold together. Default: on the cpu
   * lanes × DEFAULT_MEMORY_ROWS_PER_LANE, on cuda what fits the device (lane-budget.ts), which it may only lower.
   */
  readonly memoryRows?: number;
  /** Byte budget of the reference-prefix cache; 0 turns it off. Default DEFAULT_REFERENCE_CACHE_BYTES. */
  readonly referenceCacheBytes?: number;
}

export const DEFAULT_ENGINE_SETTINGS: EngineSettings = {
  lanes: 4,
  prefillChunk: 256,
  maxFrames: 4096,
  maxInputCodePoints: 4096,
  pieceLength: 1000,
};

/** The budget as EngineInfo reports it, with the device ledger once the lanes are planned. */
function memoryInfo(budget: LaneBudget, device: DeviceMemory | undefined): MemoryInfo {
  const laneBudget = poolCost(budget);
  if (budget.bytes === undefined) return { unit: budget.unit, laneBudget };
  return {
    unit: budget.unit,
    laneBudget,
    bytesPerPromptRow: budget.bytes.perPromptRow,
    bytesPerFrame: budget.bytes.perFrame,
    fixedBytesPerLane: budget.bytes.fixedPerLane,
    device,
    setAsideBytes: budget.device?.reservedBytes,
  };
}

export class EngineCore {
  readonly info: EngineInfo;
  private readonly budget: LaneBudget;
  private readonly scheduler: Scheduler;
  /** Each piece's text limits, raised with the engine's input limit. */
  private readonly pieceLimits: Partial<TextLimits>;
  private looping = false;
  private closed = false;

  /** `lanes`: the model's lanes planned for these settings while the runtime loaded; absent: they are planned here. */
  constructor(
    private readonly runtime: SpeechRuntime,
    private readonly settings: EngineSettings,
    private readonly emit: (event: EngineEvent) => void,
    private readonly decoder: FrameDecoder = new InlineFrameDecoder(runtime.codec, emit),
    lanes: LanePlan = planLanes(runtime.model, runtime.memory, settings),
  ) {
    this.pieceLimits = pieceTextLimits(settings.maxInputCodePoints);
    const cacheBytes = settings.referenceCacheBytes ?? DEFAULT_REFERENCE_CACHE_BYTES;
    const referenceCache = cacheBytes > 0 ? new ReferenceCache(cacheBytes) : undefined;
    const contextRows = runtime.model.contextRows;
    const memory = runtime.memory;
    this.budget = lanes.budget;
    const deviceMemory = memory === undefined ? undefined : () => memory.device();
    this.scheduler = new Scheduler(
      runtime,
      {
        lanes: settings.lanes,
        prefillChunk: settings.prefillChunk,
        referenceCache,
        decoder,
        budget: this.budget,
        deviceMemory,
        lanesPlanned: true,
        // DRAMA3_STEP_LOOKAHEAD=off reads each step back before queueing the next (to measure what look-ahead gives).
        ...(process.env.DRAMA3_STEP_LOOKAHEAD === 'off' ? { lookAhead: false } : {}),
      },
      emit,
    );
    const { rowsPerLane } = this.budget;
    this.info = {
      modelId: runtime.modelId,
      synthetic: runtime.model.synthetic,
      backend: runtime.backend ?? 'none',
      contextRows,
      maxFrames: Math.min(settings.maxFrames, contextRows - 2, rowsPerLane - 2),
      maxPromptRows: Math.min(contextRows, rowsPerLane) - 2,
      memoryRows: this.budget.poolRows,
      rowsPerLane,
      memory: memoryInfo(this.budget, deviceMemory?.()),
      maxInputCodePoints: settings.maxInputCodePoints,
      sampleRate: runtime.codec.sampleRate,
      frameLength: runtime.codec.frameLength,
      lanes: settings.lanes,
      notices: [
        ...(runtime.notices ?? []),
        // Planning the lanes is part of the time to ready, said once with its own seconds.
        planNotice(lanes, settings.lanes),
      ],
    };
  }

  handle(command: EngineCommand): void {
    if (command.type === 'submit') this.submit(command.id, command.job);
    else if (command.type === 'cancel') this.cancel(command.id);
    else if (command.type === 'forget-voice') this.scheduler.forgetVoice(command.name);
    else this.shutdown();
  }

  /** Admits a request at once (its references arrive encoded: nothing here waits), or fails it by name. */
  private submit(id: number, job: SpeechJob): void {
    let prepared: PreparedRequest;
    try {
      prepared = this.prepare(id, job);
    } catch (error) {
      this.emit({ type: 'failed', id, error: serializeError(error) });
      return;
    }
    this.emit({ type: 'admitted', id, admission: prepared.admission });
    this.scheduler.enqueue(prepared);
    this.startLoop();
  }

  private prepare(id: number, job: SpeechJob): PreparedRequest {
    // The server's own frame limit: a budget the context or a lane cannot hold is refused naming that instead.
    const limits: AdmissionLimits = {
      contextRows: this.info.contextRows,
      maxFrames: this.settings.maxFrames,
      maxInputCodePoints: this.info.maxInputCodePoints,
      budget: this.budget,
    };
    checkInputLength(job.text, limits);
    const references = job.references.map((reference) => ({ text: reference.text, frames: reference.frames }));
    const pieceLength = job.pieceLength ?? this.settings.pieceLength;
    const pieces = this.runtime.text.split(job.text, pieceLength).map((piece) =>
      this.runtime.text.prompt({
        text: piece,
        instructions: job.instructions,
        references,
        normalize: job.normalize,
        limits: this.pieceLimits,
      }),
    );
    if (pieces.length === 0) throw new DramaError('INPUT_EMPTY', 'input has nothing to speak', { param: 'input' });
    const promptRows = Math.max(...pieces.map((piece) => piece.rows.tokens.length));
    const inputTokens = pieces.reduce((sum, piece) => sum + piece.textTokens, 0);
    const budget = frameBudget(promptRows, job.maxFrames, limits, inputTokens);
    return {
      id,
      pieces,
      sampling: job.sampling,
      voices: job.references.flatMap((reference) => (reference.voice === undefined ? [] : [reference.voice])),
      admission: { inputTokens, promptRows, pieces: pieces.length, frameBudget: budget },
    };
  }

  private cancel(id: number): void {
    this.scheduler.cancel(id);
    this.startLoop();
  }

  private startLoop(): void {
    if (this.looping || this.closed) return;
    this.looping = true;
    setImmediate(() => this.loop());
  }

  private loop(): void {
    if (this.closed || !this.scheduler.hasWork()) {
      this.looping = false;
      return;
    }
    this.scheduler.runRound();
    setImmediate(() => this.loop());
  }

  private shutdown(): void {
    this.closed = true;
    this.scheduler.releaseAll();
    void this.decoder.close();
  }
}
