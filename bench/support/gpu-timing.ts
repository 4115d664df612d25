// CUDA-event timing shared by the GPU benches: the median of event-timed trials after warm-up, of a function's work
// or of the replays of a graph captured from it.
import type { CudaContext } from '../../src/backend/cuda/context.ts';
import { CapturedGraph } from '../../src/backend/cuda/graph.ts';

export interface TimingOptions {
  /** Calls of the work between the two events of one trial; the figure is per call. */
  readonly batch?: number;
  readonly trials?: number;
  readonly warmups?: number;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Milliseconds per call of `work`: the median over `trials` event-timed batches of `batch` calls, after warm-up. */
export function timeEvents(cuda: CudaContext, work: () => void, options: TimingOptions = {}): number {
  const { batch = 1, trials = 21, warmups = 2 } = options;
  const start = cuda.driver.createEvent();
  const end = cuda.driver.createEvent();
  for (let index = 0; index < warmups; index++) work();
  const samples: number[] = [];
  for (let trial = 0; trial < trials; trial++) {
    cuda.driver.recordEvent(start, cuda.stream);
    for (let index = 0; index < batch; index++) work();
    cuda.driver.recordEvent(end, cuda.stream);
    cuda.driver.synchronizeEvent(end);
    samples.push(cuda.driver.elapsedMilliseconds(start, end) / batch);
  }
  cuda.driver.destroyEvent(start);
  cuda.driver.destroyEvent(end);
  return median(samples);
}

/** Milliseconds per replay of one graph captured from what `enqueue` launches, timed as `timeEvents` times work. */
export function timeGraph(cuda: CudaContext, enqueue: () => void, options: TimingOptions = {}): number {
  const graph = CapturedGraph.capture(cuda.driver, cuda.stream, enqueue);
  try {
    return timeEvents(cuda, () => graph.launch(cuda.stream), options);
  } finally {
    graph.destroy();
  }
}
