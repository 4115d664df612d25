// Which requests' frames the decode thread decodes now and which it holds for the next pass. A GPU codec's pass costs
// much the same for one frame a lane as for a few (its launches, not its rows, are the cost at serving sizes), so
// where many lanes decode together their frames can be gathered over `frames` rounds and decoded in one pass. Every
// lane is decoded in the same pass, so lanes stay in phase; a request's first frames are never held (first audio),
// and nothing is held while fewer than `minLanes` requests decode. Chunking never changes a sample (contract 5).
import type { Frame } from '../model/types.ts';

export interface FrameGatherSettings {
  /** Frames a lane gathers before a pass decodes every held lane; 1 decodes every pass as it comes. */
  readonly frames: number;
  /** Requests with frames in a pass from which frames are held at all. */
  readonly minLanes: number;
}

/** Requests decoding together from which the bench's --codec-gather holds frames: half of the default 64 lanes. */
export const CODEC_GATHER_MIN_LANES = 32;

/** Off: every pass decodes what it got. */
export const NO_FRAME_GATHER: FrameGatherSettings = { frames: 1, minLanes: 1 };

export interface FrameGroup {
  readonly id: number;
  readonly frames: Frame[];
}

export class FrameGather {
  /** Frames waiting per request, in arrival order (a Map keeps the requests' first-arrival order). */
  private readonly held = new Map<number, Frame[]>();
  /** Requests that have had a pass: their later frames may be held. */
  private readonly started = new Set<number>();

  constructor(private readonly settings: FrameGatherSettings) {
    if (!Number.isInteger(settings.frames) || settings.frames < 1)
      throw new RangeError(`frames must be a positive integer, got ${settings.frames}`);
    if (!Number.isInteger(settings.minLanes) || settings.minLanes < 1)
      throw new RangeError(`minLanes must be a positive integer, got ${settings.minLanes}`);
  }

  /** This pass's frames join what is held; returns the groups to decode now, one per request. */
  take(groups: readonly FrameGroup[]): FrameGroup[] {
    const { frames, minLanes } = this.settings;
    // Off: each group as it came (a request with two groups in a pass gets two audio events, as without a gather).
    if (frames === 1) return [...groups];
    for (const { id, frames: arrived } of groups) {
      const waiting = this.held.get(id);
      if (waiting === undefined) this.held.set(id, [...arrived]);
      else waiting.push(...arrived);
    }
    const full = [...this.held.values()].some((waiting) => waiting.length >= frames);
    if (this.held.size < minLanes || full) return this.takeAll();
    // A new request's first frames go now, alone; the others wait for the pass that decodes every lane.
    const first = [...this.held.keys()].filter((id) => !this.started.has(id));
    return first.map((id) => this.release(id));
  }

  /** Everything held, to decode before an end, a drop or the close, so that per-request order holds. */
  takeAll(): FrameGroup[] {
    return [...this.held.keys()].map((id) => this.release(id));
  }

  /** A request that ended or was dropped: its later frames count as a new request's first. */
  forget(id: number): void {
    this.held.delete(id);
    this.started.delete(id);
  }

  private release(id: number): FrameGroup {
    const frames = this.held.get(id)!;
    this.held.delete(id);
    this.started.add(id);
    return { id, frames };
  }
}
