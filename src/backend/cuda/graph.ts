// CUDA graphs by stream capture: record the work a function enqueues on a stream once, instantiate it, replay it
// with one launch, and update the instance in place when a re-capture keeps the same topology (new pointers or
// sizes in the same kernels), falling back to a fresh instance when the driver refuses the update.
import { CaptureMode, type CudaDriver, type Handle } from './driver.ts';

export class CapturedGraph {
  private graph: Handle;
  private executable: Handle;

  private constructor(
    private readonly driver: CudaDriver,
    graph: Handle,
  ) {
    this.graph = graph;
    this.executable = driver.instantiateGraph(graph);
  }

  /** Captures what `enqueue` puts on `stream` (nothing runs during capture) and instantiates it. */
  static capture(driver: CudaDriver, stream: Handle, enqueue: () => void): CapturedGraph {
    return new CapturedGraph(driver, captureGraph(driver, stream, enqueue));
  }

  launch(stream: Handle): void {
    this.driver.launchGraph(this.executable, stream);
  }

  /** Re-captures and updates the instance; returns whether it was updated in place (false: re-instantiated). */
  update(stream: Handle, enqueue: () => void): boolean {
    const graph = captureGraph(this.driver, stream, enqueue);
    const updated = this.driver.updateGraph(this.executable, graph);
    if (!updated) {
      this.driver.destroyGraphExecutable(this.executable);
      this.executable = this.driver.instantiateGraph(graph);
    }
    this.driver.destroyGraph(this.graph);
    this.graph = graph;
    return updated;
  }

  destroy(): void {
    this.driver.destroyGraphExecutable(this.executable);
    this.driver.destroyGraph(this.graph);
  }
}

function captureGraph(driver: CudaDriver, stream: Handle, enqueue: () => void): Handle {
  driver.beginCapture(stream, CaptureMode.threadLocal);
  try {
    enqueue();
  } catch (error) {
    // End the capture so the stream is usable again; the partial graph is discarded.
    try {
      driver.destroyGraph(driver.endCapture(stream));
    } catch {
      // The capture was already invalidated by the failure being reported.
    }
    throw error;
  }
  return driver.endCapture(stream);
}
