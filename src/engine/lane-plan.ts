// The lanes' budget and the model's plan for it: admission's rows per lane (lane-budget.ts), then every lane slot and
// the step's scratch sized once (SpeechModel.plan), timed for the start-up notice.
import { DramaError } from '../errors.ts';
import type { SpeechModel } from '../model/types.ts';
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
  model.plan?.({ lanes, rowsPerLane: budget.rowsPerLane });
  return { budget, seconds: (performance.now() - started) / 1000 };
}
