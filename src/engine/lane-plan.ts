// The lanes' budget and the model's plan for it: admission's rows per lane (lane-budget.ts), then every lane slot and
// the step's scratch sized once (SpeechModel.plan), timed for the start-up notice. The engine plans as soon as the
// model is loaded, while the codec and the tokenizer may still load; a refusal is held until the rest of the load
// has settled, so that a failed load is reported first, as when the plan followed it.
import { DramaError } from '../errors.ts';
import type { PlanTimes, SpeechModel } from '../model/types.ts';
import { deviceBudget, type LaneBudget, type RuntimeMemory, rowBudget } from './lane-budget.ts';
import { DEFAULT_REFERENCE_CACHE_BYTES } from './reference-cache.ts';

/** The engine settings the plan follows (EngineSettings). */
export interface LanePlanSettings {
  readonly lanes: number;
  readonly memoryRows?: number;
  readonly referenceCacheBytes?: number;
}

export interface LanePlan {
  readonly budget: LaneBudget;
  /** How long the model's plan took. */
  readonly seconds: number;
  /** Where that time went, where the model says. */
  readonly times?: PlanTimes;
}

/** Refuses a lane count that is not a positive integer, by name. */
export function checkLanes(lanes: number): void {
  if (!Number.isInteger(lanes) || lanes < 1) {
    throw new DramaError('LANES_INVALID', `lanes must be a positive integer, got ${lanes}`, { param: 'lanes' });
  }
}

/** The budget for `settings` (in device bytes where `memory` is given, else rows), and the model planned for it. */
export function planLanes(model: SpeechModel, memory: RuntimeMemory | undefined, settings: LanePlanSettings): LanePlan {
  const { lanes, memoryRows } = settings;
  const contextRows = model.contextRows;
  const referenceCacheBytes = settings.referenceCacheBytes ?? DEFAULT_REFERENCE_CACHE_BYTES;
  const budget =
    memory === undefined
      ? rowBudget(lanes, contextRows, memoryRows)
      : deviceBudget({ lanes, contextRows, memoryRows, referenceCacheBytes, memory });
  const started = performance.now();
  checkLanes(lanes);
  // Every slot can hold any request admission lets in; the scheduler's reservations keep the lanes within the budget.
  const times = model.plan?.({ lanes, rowsPerLane: budget.rowsPerLane });
  return { budget, seconds: (performance.now() - started) / 1000, ...(times === undefined ? {} : { times }) };
}

/** The start-up notice of a plan: lanes, rows, seconds, and where the seconds went where the model says. */
export function planNotice(plan: LanePlan, lanes: number): string {
  const said = `lanes planned: ${lanes} of ${plan.budget.rowsPerLane} rows in ${plan.seconds.toFixed(1)} s`;
  const times = plan.times;
  if (times === undefined) return said;
  const recorded =
    times.recordings === 0
      ? ''
      : `, ${times.recordings} step graphs recorded in ${times.recordingSeconds.toFixed(2)} s`;
  return `${said} (slots in ${times.slotSeconds.toFixed(2)} s, the first prefill and step in ${times.firstRunSeconds.toFixed(2)} s${recorded})`;
}

/** Plans when the runtime's load reports its model, and keeps the outcome until the engine takes it. */
export class EarlyLanePlan {
  private outcome: { readonly plan: LanePlan } | { readonly refusal: unknown } | undefined;

  constructor(private readonly settings: LanePlanSettings) {}

  /** The runtime's load calls this once, as soon as the model (and where lane state lives) is known. */
  readonly onModel = (model: SpeechModel, memory: RuntimeMemory | undefined): void => {
    try {
      this.outcome = { plan: planLanes(model, memory, this.settings) };
    } catch (refusal) {
      this.outcome = { refusal };
    }
  };

  /** The plan made during the load, or undefined when none was (the engine plans then); rethrows its refusal. */
  take(): LanePlan | undefined {
    if (this.outcome !== undefined && 'refusal' in this.outcome) throw this.outcome.refusal;
    return this.outcome?.plan;
  }
}
