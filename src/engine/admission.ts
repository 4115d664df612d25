// Admission budgets (MODEL.md §7): a piece of P prompt rows with frame budget F fits when P + F + 1 <= C and when
// P + F + 1 is within the lane memory budget (the rows all active requests may hold together). An explicit
// budget is honoured exactly or refused, never clamped; without one the budget is what fits, up to the server limit
// and to a generous ceiling from the text length, so a voice that never says end of speech (a synthetic checkpoint,
// a loop) stops with finish reason `length` instead of running for minutes.
import { DramaError } from '../errors.ts';

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
  /** Rows of lane state (prompt rows + frames + 1) all active requests may hold together: the memory budget. */
  readonly memoryRows: number;
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

/** The frame budget F for a request whose largest piece has `promptRows` rows and whose text has `inputTokens`. */
export function frameBudget(
  promptRows: number,
  requested: number | undefined,
  limits: AdmissionLimits,
  inputTokens: number,
): number {
  const { contextRows, maxFrames, memoryRows } = limits;
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
    if (promptRows + requested + 1 > memoryRows) {
      throw new DramaError(
        'MEMORY_BUDGET_EXCEEDED',
        `prompt rows ${promptRows} + max_frames ${requested} + 1 = ${promptRows + requested + 1} exceeds the server's lane memory budget of ${memoryRows} rows`,
        { param: 'max_frames' },
      );
    }
    return requested;
  }
  const fits = Math.min(contextRows, memoryRows) - promptRows - 1;
  if (fits < 1) {
    throw new DramaError(
      'CONTEXT_OVERFLOW',
      `prompt rows ${promptRows} leave no room for a frame in the context window of ${contextRows} rows and the lane memory budget of ${memoryRows} rows (at most ${Math.min(contextRows, memoryRows) - 2} prompt rows)`,
      { param: 'input' },
    );
  }
  return Math.min(maxFrames, fits, textFrameCeiling(inputTokens));
}
