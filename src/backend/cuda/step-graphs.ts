// Frame steps as CUDA graphs, one per key (the model's `step<batch>`): the first call with a key records what the
// step enqueues and launches the recording; later calls launch it again. A recording is kept with the backend's
// allocation count when it was made: after a growth (new scratch or buffers, so new pointers) the key records again.
// Recording runs nothing, so a recording that fails (an op that needs to grow scratch, which synchronises) leaves the
// device untouched: the step then runs directly, once, and the next call records with the grown buffers.
// With `recordAfter` n > 1, a key's first n − 1 calls run directly and the n-th records: a batch size seen once or
// twice (lanes joining or ending) costs a direct step, not a recording several steps long. Same launches either way.
import type { StepGraphStats } from '../types.ts';
import type { CudaContext } from './context.ts';
import { CapturedGraph } from './graph.ts';

interface Recording {
  readonly graph: CapturedGraph;
  readonly allocations: number;
}

export class StepGraphs {
  private readonly recordings = new Map<string, Recording>();
  /** Calls per key not yet recorded. */
  private readonly unrecordedCalls = new Map<string, number>();
  /** Recordings made (first ones and re-recordings). */
  recorded = 0;
  /** Steps that ran directly after a failed recording. */
  fallbacks = 0;
  /** Steps that ran directly because their key had not been called `recordAfter` times yet. */
  direct = 0;

  constructor(
    private readonly cuda: CudaContext,
    private readonly allocations: () => number,
    private readonly recordAfter = 1,
  ) {
    if (!Number.isInteger(recordAfter) || recordAfter < 1)
      throw new RangeError(`recordAfter must be a positive integer, got ${recordAfter}`);
  }

  get stats(): StepGraphStats {
    return { recorded: this.recorded, direct: this.direct + this.fallbacks };
  }

  run(key: string, enqueue: () => void): void {
    const { driver, stream } = this.cuda;
    const held = this.recordings.get(key);
    if (held !== undefined && held.allocations === this.allocations()) {
      held.graph.launch(stream);
      return;
    }
    if (held === undefined) {
      const calls = (this.unrecordedCalls.get(key) ?? 0) + 1;
      if (calls < this.recordAfter) {
        this.unrecordedCalls.set(key, calls);
        this.direct += 1;
        enqueue();
        return;
      }
      this.unrecordedCalls.delete(key);
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
  }
}
