// One CUDA device as the cuda backend uses it: the device's primary context (shared with cuBLASLt), a default
// non-blocking stream, the allocator with its limits, and the kernel modules. Opened once per engine thread.
import { type CudaDriver, DeviceAttribute, type Handle, loadDriver } from './driver.ts';
import { type Allocation, type AllocationBackend, type MemoryKind, MemoryPool } from './memory.ts';
import { KernelLibrary } from './modules.ts';

export interface DeviceProperties {
  readonly name: string;
  readonly computeCapability: readonly [number, number];
  readonly multiprocessors: number;
  readonly l2CacheBytes: number;
  readonly totalBytes: number;
  readonly driverVersion: number;
}

export interface CudaContextOptions {
  readonly ordinal?: number;
  /** Device bytes the allocator may hand out; defaults to 90% of the device's memory. */
  readonly deviceLimitBytes?: number;
  /** Pinned host bytes the allocator may hand out; defaults to 4 GiB. */
  readonly pinnedHostLimitBytes?: number;
  readonly kernelDirectory?: string;
}

export function driverAllocationBackend(driver: CudaDriver): AllocationBackend {
  return {
    allocate: (kind: MemoryKind, bytes: number) =>
      kind === 'device' ? driver.allocateDevice(bytes) : driver.allocatePinnedHost(bytes),
    release: (kind: MemoryKind, pointer: bigint) =>
      kind === 'device' ? driver.freeDevice(pointer) : driver.freePinnedHost(pointer),
  };
}

/** DRAMA3_SIDE_STREAM=off runs alongside()'s parts one after the other on one stream (to measure what it gives). */
const sideStreams = process.env.DRAMA3_SIDE_STREAM !== 'off';

export class CudaContext {
  readonly driver: CudaDriver;
  readonly device: number;
  readonly context: Handle;
  /** The stream every launch goes to: the context's own, or the side stream while a branch is enqueued. */
  get stream(): Handle {
    return this.current;
  }
  private readonly mainStream: Handle;
  private current: Handle;
  private side?: { readonly stream: Handle; readonly forked: Handle; readonly joined: Handle };
  readonly memory: MemoryPool;
  readonly kernels: KernelLibrary;
  readonly properties: DeviceProperties;

  constructor(options: CudaContextOptions = {}) {
    const driver = loadDriver();
    this.driver = driver;
    this.device = driver.device(options.ordinal ?? 0);
    this.context = driver.retainPrimaryContext(this.device);
    driver.setCurrentContext(this.context);
    this.mainStream = driver.createStream();
    this.current = this.mainStream;
    const totalBytes = driver.deviceTotalBytes(this.device);
    this.properties = {
      name: driver.deviceName(this.device),
      computeCapability: [
        driver.deviceAttribute(DeviceAttribute.computeCapabilityMajor, this.device),
        driver.deviceAttribute(DeviceAttribute.computeCapabilityMinor, this.device),
      ],
      multiprocessors: driver.deviceAttribute(DeviceAttribute.multiprocessorCount, this.device),
      l2CacheBytes: driver.deviceAttribute(DeviceAttribute.l2CacheBytes, this.device),
      totalBytes,
      driverVersion: driver.driverVersion(),
    };
    this.memory = new MemoryPool(driverAllocationBackend(driver), {
      deviceBytes: options.deviceLimitBytes ?? Math.floor(totalBytes * 0.9),
      pinnedHostBytes: options.pinnedHostLimitBytes ?? 4 * 1024 ** 3,
    });
    this.kernels = new KernelLibrary(driver, options.kernelDirectory);
  }

  allocate(bytes: number, label: string): Allocation {
    return this.memory.allocate('device', bytes, label);
  }

  /** Copies a host array into a fresh device allocation (synchronously, on the context's stream). */
  upload(values: ArrayBufferView, label: string): Allocation {
    const allocation = this.allocate(Math.max(values.byteLength, 1), label);
    this.driver.copyHostToDevice(allocation.pointer, values, values.byteLength, this.stream);
    this.driver.synchronizeStream(this.stream);
    return allocation;
  }

  /** Copies device bytes back into `into` after the stream's work so far. */
  download<T extends ArrayBufferView>(source: bigint, into: T): T {
    this.driver.copyDeviceToHost(into, source, into.byteLength, this.stream);
    this.driver.synchronizeStream(this.stream);
    return into;
  }

  /** Waits for the work queued on the context's stream and on the side stream. */
  synchronize(): void {
    this.driver.synchronizeStream(this.mainStream);
    if (this.side !== undefined) this.driver.synchronizeStream(this.side.stream);
  }

  /**
   * Two independent parts of the work side by side: `side` is enqueued on a second stream after everything queued so
   * far, `main` on the context's stream, and what is enqueued afterwards waits for both. Captured in a graph this is
   * a fork and a join, so the parts run together; each part's launches and their order are as if run alone, so the
   * bits cannot change. `side` must not touch what `main` writes, nor the reverse.
   */
  alongside(side: () => void, main: () => void): void {
    if (this.current !== this.mainStream) throw new Error('alongside() cannot nest: the side stream is in use');
    if (!sideStreams) {
      side();
      main();
      return;
    }
    const branch = this.side ?? this.createSide();
    this.driver.recordEvent(branch.forked, this.mainStream);
    this.driver.streamWaitEvent(branch.stream, branch.forked);
    this.current = branch.stream;
    try {
      side();
    } finally {
      this.current = this.mainStream;
      // Joined even when `side` threw, so that a capture in progress can end.
      this.driver.recordEvent(branch.joined, branch.stream);
    }
    try {
      main();
    } finally {
      this.driver.streamWaitEvent(this.mainStream, branch.joined);
    }
  }

  private createSide() {
    this.side = {
      stream: this.driver.createStream(),
      forked: this.driver.createEvent(false),
      joined: this.driver.createEvent(false),
    };
    return this.side;
  }

  close(): void {
    this.synchronize();
    this.kernels.unloadAll();
    if (this.side !== undefined) {
      this.driver.destroyEvent(this.side.forked);
      this.driver.destroyEvent(this.side.joined);
      this.driver.destroyStream(this.side.stream);
    }
    this.driver.destroyStream(this.mainStream);
    this.driver.releasePrimaryContext(this.device);
  }
}
