// Pitch-preserving time stretch (WSOLA) for the `speed` field, streaming: mono fp32 in, mono fp32 out at the same
// rate, about length / speed samples. Output frame k (Hann window N, hop N/2) takes the input segment near k·hop·speed
// whose start best continues the previous segment (cross-correlation over ±SEARCH samples), so periods stay intact.
// Decisions depend only on the samples, never on how the input was chunked: pushes and flush equal one whole call.
import { concatSamples } from './pcm.ts';

const WINDOW = 1024;
const HOP = WINDOW / 2;
const SEARCH = 128;
/** Samples compared when choosing a segment start. */
const MATCH = 512;

/** Periodic Hann: at 50% overlap the windows sum to exactly 1. */
const HANN = Float32Array.from({ length: WINDOW }, (_, index) => 0.5 - 0.5 * Math.cos((2 * Math.PI * index) / WINDOW));
/** The first frame has no predecessor to overlap: its rising half is flat so the start is not faded in. */
const FIRST_WINDOW = Float32Array.from(HANN, (value, index) => (index < HOP ? 1 : value));

export class TimeStretch {
  /** Input samples from absolute index `inputBase` on. */
  private input: Float32Array = new Float32Array(0);
  private inputBase = 0;
  private ended = false;
  /** Overlap-add accumulator for output samples [frame·HOP, frame·HOP + WINDOW). */
  private readonly accumulator = new Float64Array(WINDOW);
  private frame = 0;
  /** Absolute input start of the previous output frame's segment. */
  private previousStart = 0;
  private emitted = 0;

  constructor(readonly speed: number) {}

  push(samples: Float32Array): Float32Array {
    this.input = concatSamples([this.input, samples]);
    return this.run();
  }

  flush(): Float32Array {
    this.ended = true;
    return this.run();
  }

  /** Samples pushed so far (those discarded included). */
  private get inputLength(): number {
    return this.inputBase + this.input.length;
  }

  private sample(index: number): number {
    const local = index - this.inputBase;
    return local >= 0 && local < this.input.length ? this.input[local]! : 0;
  }

  private run(): Float32Array {
    const out: number[] = [];
    const target = Math.round(this.inputLength / this.speed);
    for (;;) {
      const nominal = Math.round(this.frame * HOP * this.speed);
      if (this.ended ? nominal >= this.inputLength : nominal + SEARCH + WINDOW > this.inputLength) break;
      const start = this.frame === 0 ? 0 : this.bestStart(nominal);
      const window = this.frame === 0 ? FIRST_WINDOW : HANN;
      for (let index = 0; index < WINDOW; index++)
        this.accumulator[index]! += window[index]! * this.sample(start + index);
      for (let index = 0; index < HOP; index++) out.push(this.accumulator[index]!);
      this.accumulator.copyWithin(0, HOP);
      this.accumulator.fill(0, WINDOW - HOP);
      this.previousStart = start;
      this.frame += 1;
      this.discardBefore(Math.min(start + HOP, Math.round(this.frame * HOP * this.speed) - SEARCH));
    }
    if (this.ended) for (let index = 0; index < WINDOW - HOP; index++) out.push(this.accumulator[index]!);
    const keep = Math.max(0, Math.min(out.length, (this.ended ? target : Number.POSITIVE_INFINITY) - this.emitted));
    this.emitted += keep;
    const result = Float32Array.from(out.slice(0, keep));
    if (!this.ended || this.emitted >= target) return result;
    // A very short input can end before the windows cover `target` samples: pad with silence.
    const padded = new Float32Array(result.length + target - this.emitted);
    padded.set(result);
    this.emitted = target;
    return padded;
  }

  /** The segment start within ±SEARCH of `nominal` that best continues the previous segment. */
  private bestStart(nominal: number): number {
    const natural = this.previousStart + HOP;
    let best = nominal;
    let bestScore = Number.NEGATIVE_INFINITY;
    for (let offset = -SEARCH; offset <= SEARCH; offset++) {
      const start = nominal + offset;
      if (start < 0) continue;
      let score = 0;
      for (let index = 0; index < MATCH; index++) score += this.sample(start + index) * this.sample(natural + index);
      if (score > bestScore) {
        bestScore = score;
        best = start;
      }
    }
    return best;
  }

  private discardBefore(absolute: number): void {
    const drop = Math.min(this.input.length, Math.max(0, absolute - this.inputBase));
    if (drop === 0) return;
    this.input = this.input.slice(drop);
    this.inputBase += drop;
  }
}
