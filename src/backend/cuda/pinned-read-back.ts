// Small device → host reads (a frame step's frames) through one pinned host buffer. A copy into pageable memory is
// staged by the driver, and in serving, where the codec's thread copies its audio back in the same context, a step's
// read back returned about 3.9 ms after its graph had finished (bench/gpu-serve.ts, 64 clients); a copy into pinned
// memory is one transfer the stream orders, nothing staged. DRAMA3_PINNED_READ_BACK=off reads into pageable memory
// (to measure what this gives).
import type { CudaContext } from './context.ts';
import type { DevicePointer } from './driver.ts';
import type { Allocation } from './memory.ts';

/** The buffer's least size, so that every step's read back fits after the first. */
const LEAST_BYTES = 64 * 1024;

export class PinnedReadBack {
  private held: { allocation: Allocation; bytes: Uint8Array } | undefined;
  private readonly pinned = process.env.DRAMA3_PINNED_READ_BACK !== 'off';

  constructor(private readonly cuda: CudaContext) {}

  /** Copies `target.byteLength` bytes at `source` into `target` after the stream's work so far. */
  read(source: DevicePointer, target: ArrayBufferView): void {
    if (!this.pinned) {
      this.cuda.download(source, target);
      return;
    }
    const { driver, stream } = this.cuda;
    const buffer = this.buffer(target.byteLength);
    driver.copyDeviceToHost(buffer.allocation.pointer, source, target.byteLength, stream);
    driver.synchronizeStream(stream);
    new Uint8Array(target.buffer, target.byteOffset, target.byteLength).set(
      buffer.bytes.subarray(0, target.byteLength),
    );
  }

  release(): void {
    this.held?.allocation.free();
    this.held = undefined;
  }

  private buffer(bytes: number): { allocation: Allocation; bytes: Uint8Array } {
    if (this.held !== undefined && this.held.bytes.byteLength >= bytes) return this.held;
    this.release();
    const size = Math.max(LEAST_BYTES, bytes);
    const allocation = this.cuda.memory.allocate('pinned-host', size, 'read back');
    this.held = { allocation, bytes: this.cuda.pinnedView(allocation.pointer, size) };
    return this.held;
  }
}
