// Frame steps as CUDA graphs, one per key (the model's `step<batch>`): the first call with a key records what the
// step enqueues and launches the recording; later calls launch it again. A recording is kept with the backend's
// allocation count when it was made: after a growth (new scratch or buffers, so new pointers) the key records again.
// Recording runs nothing, so a recording that fails (an op that needs to grow scratch, which synchronises) leaves the
// device untouched: the step then runs directly, once, and the next call records with the grown buffers.
// Each launch of a held recording sits between two timing events (a step's tail, which runs beside the next step, is
// not timed): the device's own time in the step, apart from the host's and from work queued before it. Two pairs
// take turns, so that launching a step never waits for the one before it (the scheduler queues step t + 1 while
// step t runs); a pair is read when its turn comes round again, and the stats add the pairs whose replay has finished
// without waiting for one still running.
import type { StepGraphStats } from '../types.ts';
import type { CudaContext } from './context.ts';
import type { Handle } from './driver.ts';
import { CapturedGraph } from './graph.ts';

interface Recording {
  readonly graph: CapturedGraph;
  readonly allocations: number;
}

/** Timing pairs taking turns: one for the step running, one for the step queued behind it. */
const TIMING_PAIRS = 2;

/** Events around one launch of a recording; `pending` until its time is counted. */
interface TimingPair {
  readonly start: Handle;
  readonly end: Handle;
  pending: boolean;
}

export class StepGraphs {
  private readonly recordings = new Map<string, Recording>();
  /** Recordings made (first ones and re-recordings). */
  recorded = 0;
  /** Steps that ran directly after a failed recording. */
  fallbacks = 0;
  private replays = 0;
  private replayMs = 0;
  private readonly timing: TimingPair[] = [];
  private launches = 0;

  constructor(
    private readonly cuda: CudaContext,
    private readonly allocations: () => number,
  ) {}

  get stats(): StepGraphStats {
    for (const pair of this.timing) if (pair.pending && this.cuda.driver.eventDone(pair.end)) this.countReplay(pair);
    return { recorded: this.recorded, direct: this.fallbacks, replays: this.replays, replayMs: this.replayMs };
  }

  /** Launches (or records and launches) `key` on the context's current stream; `timed` puts it in the stats. */
  run(key: string, enqueue: () => void, timed = true): void {
    const { driver, stream } = this.cuda;
    const held = this.recordings.get(key);
    if (held !== undefined && held.allocations === this.allocations()) {
      if (!timed) {
        held.graph.launch(stream);
        return;
      }
      const turn = this.launches++ % TIMING_PAIRS;
      this.timing[turn] ??= { start: driver.createEvent(), end: driver.createEvent(), pending: false };
      const pair = this.timing[turn]!;
      this.countReplay(pair);
      driver.recordEvent(pair.start, stream);
      held.graph.launch(stream);
      driver.recordEvent(pair.end, stream);
      pair.pending = true;
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
    for (const pair of this.timing.splice(0)) {
      this.cuda.driver.synchronizeEvent(pair.end);
      this.cuda.driver.destroyEvent(pair.start);
      this.cuda.driver.destroyEvent(pair.end);
    }
  }

  /** Adds a timed replay's device time (its step has been read back by its turn, so this seldom waits). */
  private countReplay(pair: TimingPair): void {
    if (!pair.pending) return;
    this.cuda.driver.synchronizeEvent(pair.end);
    this.replays += 1;
    this.replayMs += this.cuda.driver.elapsedMilliseconds(pair.start, pair.end);
    pair.pending = false;
  }
}
