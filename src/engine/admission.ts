// Admission budgets (MODEL.md §7): a piece of P prompt rows with frame budget F fits when P + F + 1 <= C and when
// a lane can hold P + F + 1 rows (lane-budget.ts: device bytes on cuda, rows on the cpu); a request that fits a lane
// but not beside those running waits for them in the scheduler. An explicit
// budget is honoured exactly or refused, never clamped; without one the budget is what fits, up to the server limit
// and to a generous ceiling from the text length, so a voice that never says end of speech (a synthetic checkpoint,
// a loop) stops with finish reason `length` instead of running for minutes.
import { DramaError } from '../errors.ts';
import { type LaneBudget, requestCost } from './lane-budget.ts';

/** Frames allowed per input token when the request sets no budget (about 1.5 s; speech needs about 0.3 s). */
const DEFAULT_FRAMES_PER_TOKEN = 32;
/** Frames allowed on top of that (about 3 s) for short inputs. */
const DEFAULT_FRAMES_BASE = 64;

/** The frame ceiling of a request without `max_frames`. */
function textFrameCeiling(inputTokens: number): number {
  return DEFAULT_FRAMES_BASE + DEFAULT_FRAMES_PER_TOKEN * inputTokens;
}

export interface AdmissionLimits {
  /** Context window C in rows. */
  readonly contextRows: number;
  /** Most frames one request may ask for. */
  readonly maxFrames: number;
  /** Input limit in Unicode code points. */
  readonly maxInputCodePoints: number;
  /** Lane memory: the rows one request may hold, and their cost in device bytes or rows. */
  readonly budget: LaneBudget;
}

/** Refuses input over the code-point limit, naming both numbers. */
export function checkInputLength(text: string, limits: AdmissionLimits): void {
  const codePoints = [...text].length;
  if (codePoints === 0) throw new DramaError('INPUT_EMPTY', 'input is empty', { param: 'input' });
  if (codePoints > limits.maxInputCodePoints) {
    throw new DramaError(
      'INPUT_TOO_LONG',
      `input has ${codePoints} code points; the limit is ${limits.maxInputCodePoints}`,
      { param: 'input' },
    );
  }
}

/** What a lane holds, in words: "70 rows (3298514 device bytes: 47104 a row, 1234 a lane)" or "70 rows". */
function laneHolds(budget: LaneBudget): string {
  const rows = budget.rowsPerLane;
  if (budget.unit === 'rows') return `${rows} rows`;
  return `${rows} rows (${requestCost(budget, rows)} device bytes: ${budget.perRow} a row, ${budget.fixedPerLane} a lane)`;
}

/** Refuses an explicit frame budget that no lane can hold: the frames, their bytes, and the most that fit. */
function framesDoNotFit(promptRows: number, frames: number, budget: LaneBudget): DramaError {
  const rows = promptRows + frames + 1;
  const fits = budget.rowsPerLane - promptRows - 1;
  const cost = budget.unit === 'rows' ? '' : `; ${frames} frames take ${frames * budget.perRow} device bytes`;
  return new DramaError(
    'MEMORY_BUDGET_EXCEEDED',
    `prompt rows ${promptRows} + max_frames ${frames} + 1 = ${rows} rows exceed a lane's memory of ${laneHolds(budget)}${cost}; ` +
      (fits >= 1 ? `at most ${fits} frames fit after ${promptRows} prompt rows` : 'no frame fits after this prompt'),
    { param: 'max_frames' },
  );
}

/** Refuses a prompt that leaves no lane room for one frame: its rows, their bytes, and the most that fit. */
function promptDoesNotFit(promptRows: number, budget: LaneBudget): DramaError {
  const cost = budget.unit === 'rows' ? '' : ` (${requestCost(budget, promptRows)} device bytes)`;
  return new DramaError(
    'MEMORY_BUDGET_EXCEEDED',
    `prompt rows ${promptRows}${cost} leave no room for a frame in a lane's memory of ${laneHolds(budget)}; ` +
      `at most ${budget.rowsPerLane - 2} prompt rows fit`,
    { param: 'input' },
  );
}

/** The frame budget F for a request whose largest piece has `promptRows` rows and whose text has `inputTokens`. */
export function frameBudget(
  promptRows: number,
  requested: number | undefined,
  limits: AdmissionLimits,
  inputTokens: number,
): number {
  const { contextRows, maxFrames, budget } = limits;
  if (requested !== undefined) {
    if (!Number.isInteger(requested) || requested < 1) {
      throw new DramaError('MAX_FRAMES_INVALID', `max_frames must be a positive integer, got ${requested}`, {
        param: 'max_frames',
      });
    }
    if (requested > maxFrames) {
      throw new DramaError('FRAME_LIMIT_EXCEEDED', `max_frames ${requested} exceeds the server limit of ${maxFrames}`, {
        param: 'max_frames',
      });
    }
    if (promptRows + requested + 1 > contextRows) {
      throw new DramaError(
        'CONTEXT_OVERFLOW',
        `prompt rows ${promptRows} + max_frames ${requested} + 1 = ${promptRows + requested + 1} exceeds the context window of ${contextRows} rows`,
        { param: 'max_frames' },
      );
    }
    if (promptRows + requested + 1 > budget.rowsPerLane) throw framesDoNotFit(promptRows, requested, budget);
    return requested;
  }
  if (promptRows + 2 > contextRows) {
    throw new DramaError(
      'CONTEXT_OVERFLOW',
      `prompt rows ${promptRows} leave no room for a frame in the context window of ${contextRows} rows (at most ${contextRows - 2} prompt rows)`,
      { param: 'input' },
    );
  }
  if (promptRows + 2 > budget.rowsPerLane) throw promptDoesNotFit(promptRows, budget);
  const fits = Math.min(contextRows, budget.rowsPerLane) - promptRows - 1;
  return Math.min(maxFrames, fits, textFrameCeiling(inputTokens));
}
