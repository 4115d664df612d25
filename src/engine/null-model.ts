// A SpeechModel with no arithmetic, for scheduler and server tests: frame t of a lane is a hash of (seed, prompt, t),
// and speech ends after a length derived from the prompt. Frames are [K] int32: code[0] in 0..4095, code[1..9] 0..1023.
import { DramaError } from '../errors.ts';
import { refuseRepeatedLanes } from '../model/prefill-calls.ts';
import type { FrameOutcome, Lane, PrefillPart, PromptRows, SamplingSettings, SpeechModel } from '../model/types.ts';
import { hashedFrame, mix32 } from '../shared/hashed-frame.ts';

export interface NullModelOptions {
  /** Context window C in rows. */
  readonly contextRows?: number;
  /** Frames spoken per prompt row before end of speech (the length is rows × this, at least one frame). */
  readonly framesPerRow?: number;
  /** Time each frame round takes, to make rounds observable in tests; blocks the calling thread. */
  readonly stepMilliseconds?: number;
  /** A step that would produce this frame index fails instead (a device failure mid-request, for tests). */
  readonly failAtFrame?: number;
  /** A step that would produce this frame index ends the calling thread (a crashed backend, for tests). */
  readonly exitAtFrame?: number;
}

class NullLane implements Lane {
  position = 0;
  promptHash = 0;
  promptRows = 0;
  framesGenerated = 0;
  released = false;
  constructor(readonly seed: number) {}
}

export class NullSpeechModel implements SpeechModel {
  readonly contextRows: number;
  readonly synthetic = true;
  private readonly framesPerRow: number;
  private readonly stepMilliseconds: number;
  private readonly failAtFrame: number;
  private readonly exitAtFrame: number;
  /** Lanes currently holding storage: what the engine must return to zero. */
  liveLanes = 0;

  constructor(options: NullModelOptions = {}) {
    this.contextRows = options.contextRows ?? 4096;
    this.framesPerRow = options.framesPerRow ?? 0.5;
    this.stepMilliseconds = options.stepMilliseconds ?? 0;
    this.failAtFrame = options.failAtFrame ?? Number.POSITIVE_INFINITY;
    this.exitAtFrame = options.exitAtFrame ?? Number.POSITIVE_INFINITY;
  }

  newLane(sampling: SamplingSettings): Lane {
    this.liveLanes += 1;
    return new NullLane(sampling.seed >>> 0);
  }

  prefill(lane: Lane, rows: PromptRows, from: number, to: number): void {
    const state = this.checkPrefill({ lane, rows, from, to });
    for (let row = from; row < to; row++) state.promptHash = mix32(state.promptHash ^ (rows.tokens[row]! + row * 7919));
    state.promptRows = to;
    state.position = to;
  }

  /** Every part is checked before any is prefilled, as the real model does; then each runs through `prefill`. */
  prefillTogether(parts: readonly PrefillPart[]): void {
    refuseRepeatedLanes(parts);
    for (const part of parts) this.checkPrefill(part);
    for (const { lane, rows, from, to } of parts) this.prefill(lane, rows, from, to);
  }

  private checkPrefill({ lane, rows, from, to }: PrefillPart): NullLane {
    const state = this.own(lane);
    if (from !== state.promptRows || to > rows.tokens.length || to < from) {
      throw new DramaError('PREFILL_OUT_OF_ORDER', `prefill rows [${from}, ${to}) after ${state.promptRows} rows`, {
        kind: 'internal',
      });
    }
    return state;
  }

  step(lanes: readonly Lane[]): FrameOutcome[] {
    if (this.stepMilliseconds > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, this.stepMilliseconds);
    for (const lane of lanes) {
      if (this.own(lane).framesGenerated >= this.exitAtFrame) process.exit(3);
      if (this.own(lane).framesGenerated >= this.failAtFrame) {
        throw new DramaError('NULL_MODEL_FAILURE', `the null model fails at frame ${this.failAtFrame} as configured`, {
          kind: 'device',
        });
      }
    }
    return lanes.map((lane) => {
      const state = this.own(lane);
      const length = Math.max(1, Math.round(state.promptRows * this.framesPerRow));
      state.position += 1;
      if (state.framesGenerated >= length) return { end: true };
      const frame = hashedFrame(mix32(state.seed ^ mix32(state.promptHash + state.framesGenerated)));
      state.framesGenerated += 1;
      return { end: false, frame };
    });
  }

  release(lane: Lane): void {
    const state = this.own(lane);
    if (state.released) throw new DramaError('LANE_RELEASED_TWICE', 'a lane was released twice', { kind: 'internal' });
    state.released = true;
    this.liveLanes -= 1;
  }

  private own(lane: Lane): NullLane {
    if (!(lane instanceof NullLane) || lane.released) {
      throw new DramaError('LANE_NOT_LIVE', 'a lane that is released or not from this model was used', {
        kind: 'internal',
      });
    }
    return lane;
  }
}
