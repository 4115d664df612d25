// One CUDA device as the cuda backend uses it: the device's primary context (shared with cuBLASLt), a default
// non-blocking stream, the allocator with its limits, and the kernel modules. Opened once per engine thread.
import koffi from 'koffi';
import { type CudaDriver, DeviceAttribute, type Handle, loadDriver } from './driver.ts';
import { type Allocation, type AllocationBackend, type MemoryKind, MemoryPool } from './memory.ts';
import { KernelLibrary } from './modules.ts';
import { ContextStreams } from './streams.ts';

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
  /**
   * `high`: this context's streams are served before other work on the device (the frame step beside the codec in
   * one process, so that decoding never holds a frame round back); `normal` (the default): the driver's default.
   */
  readonly streamPriority?: StreamPriority;
}

export type StreamPriority = 'high' | 'normal';

export function driverAllocationBackend(driver: CudaDriver): AllocationBackend {
  return {
    allocate: (kind: MemoryKind, bytes: number) =>
      kind === 'device' ? driver.allocateDevice(bytes) : driver.allocatePinnedHost(bytes),
    release: (kind: MemoryKind, pointer: bigint) =>
      kind === 'device' ? driver.freeDevice(pointer) : driver.freePinnedHost(pointer),
  };
}

export class CudaContext {
  readonly driver: CudaDriver;
  readonly device: number;
  readonly context: Handle;
  /** The stream every launch goes to: the context's own, or the side or tail stream while a part is enqueued there. */
  get stream(): Handle {
    return this.streams.current;
  }
  private readonly streams: ContextStreams;
  readonly memory: MemoryPool;
  readonly kernels: KernelLibrary;
  readonly properties: DeviceProperties;

  constructor(options: CudaContextOptions = {}) {
    const driver = loadDriver();
    this.driver = driver;
    this.device = driver.device(options.ordinal ?? 0);
    this.context = driver.retainPrimaryContext(this.device);
    driver.setCurrentContext(this.context);
    const range = driver.streamPriorityRange();
    const priority = options.streamPriority === 'high' ? range.greatest : 0;
    // A step's tail is not on the step's critical path: a tail asked to run below it has the next priority down
    // (none below the least, where a context of the default priority already is).
    this.streams = new ContextStreams(driver, undefined, priority, undefined, Math.min(priority + 1, range.least));
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

  /** The bytes of pinned host memory this context allocated, as an array over that memory (no copy). */
  pinnedView(pointer: bigint, bytes: number): Uint8Array {
    return new Uint8Array(koffi.view(pointer, bytes));
  }

  /** Waits for the work queued on every stream of the context. */
  synchronize(): void {
    this.streams.synchronize();
  }

  /** Two independent parts of the work side by side, on two streams (streams.ts says how and why it is exact). */
  alongside(side: () => void, main: () => void): void {
    this.streams.alongside(side, main);
  }

  /** Whether tail() work runs on its own stream, beside the work queued after it (else where it is queued). */
  get tailsBeside(): boolean {
    return this.streams.tailsBeside;
  }

  /** `work` on a tail stream (`below`: a priority below), beside what is queued after it until joinTail() (streams.ts). */
  tail(work: () => void, below = false): void {
    this.streams.tail(work, below);
  }

  /** What is queued from now on waits for every tail queued so far. */
  joinTail(): void {
    this.streams.joinTail();
  }

  close(): void {
    this.streams.synchronize();
    this.kernels.unloadAll();
    this.streams.destroy();
    this.driver.releasePrimaryContext(this.device);
  }
}
