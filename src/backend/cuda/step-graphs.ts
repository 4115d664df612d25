// Frame steps as CUDA graphs, one per key (the model's `step<batch>`): the first call with a key records what the
// step enqueues and launches the recording; later calls launch it again. A recording is kept with the backend's
// allocation count when it was made: after a growth (new scratch or buffers, so new pointers) the key records again.
// Recording runs nothing, so a recording that fails (an op that needs to grow scratch, which synchronises) leaves the
// device untouched: the step then runs directly, once, and the next call records with the grown buffers.
// Each launch of a held recording sits between two timing events, read once the next call or the stats find the
// launch finished: the device's own time in the step, apart from the host's and from work queued before it.
import type { StepGraphStats } from '../types.ts';
import type { CudaContext } from './context.ts';
import type { Handle } from './driver.ts';
import { CapturedGraph } from './graph.ts';

interface Recording {
  readonly graph: CapturedGraph;
  readonly allocations: number;
}

export class StepGraphs {
  private readonly recordings = new Map<string, Recording>();
  /** Recordings made (first ones and re-recordings). */
  recorded = 0;
  /** Steps that ran directly after a failed recording. */
  fallbacks = 0;
  private replays = 0;
  private replayMs = 0;
  private timing: { readonly start: Handle; readonly end: Handle; pending: boolean } | undefined;

  constructor(
    private readonly cuda: CudaContext,
    private readonly allocations: () => number,
  ) {}

  get stats(): StepGraphStats {
    this.countFinishedReplay();
    return { recorded: this.recorded, direct: this.fallbacks, replays: this.replays, replayMs: this.replayMs };
  }

  run(key: string, enqueue: () => void): void {
    const { driver, stream } = this.cuda;
    const held = this.recordings.get(key);
    if (held !== undefined && held.allocations === this.allocations()) {
      this.countFinishedReplay();
      this.timing ??= { start: driver.createEvent(), end: driver.createEvent(), pending: false };
      driver.recordEvent(this.timing.start, stream);
      held.graph.launch(stream);
      driver.recordEvent(this.timing.end, stream);
      this.timing.pending = true;
      return;
    }
    let graph: CapturedGraph;
    try {
      if (held === undefined) {
        graph = CapturedGraph.capture(driver, stream, enqueue);
      } else {
        held.graph.update(stream, enqueue);
        graph = held.graph;
      }
    } catch {
      // Nothing of the step ran: run it directly (it may grow buffers), record on the next call.
      if (held !== undefined) held.graph.destroy();
      this.recordings.delete(key);
      this.fallbacks += 1;
      enqueue();
      return;
    }
    this.recorded += 1;
    this.recordings.set(key, { graph, allocations: this.allocations() });
    graph.launch(stream);
  }

  /** Recordings held. */
  get size(): number {
    return this.recordings.size;
  }

  /** Whether a recording is held for `key` (tests). */
  has(key: string): boolean {
    return this.recordings.has(key);
  }

  release(): void {
    for (const recording of this.recordings.values()) recording.graph.destroy();
    this.recordings.clear();
    if (this.timing !== undefined) {
      this.cuda.driver.synchronizeEvent(this.timing.end);
      this.cuda.driver.destroyEvent(this.timing.start);
      this.cuda.driver.destroyEvent(this.timing.end);
      this.timing = undefined;
    }
  }

  /** Adds the last replay's device time (a frame step has read its frames back by then, so this seldom waits). */
  private countFinishedReplay(): void {
    const timing = this.timing;
    if (timing === undefined || !timing.pending) return;
    this.cuda.driver.synchronizeEvent(timing.end);
    this.replays += 1;
    this.replayMs += this.cuda.driver.elapsedMilliseconds(timing.start, timing.end);
    timing.pending = false;
  }
}
