// A CudaContext over a host imitation of the driver, for what the cuda backend does without a GPU: device memory is
// host bytes (allocation, copies and 8/32-bit fills really happen), kernel launches are recorded by name with their
// arguments (never run), and stream capture is imitated as the driver does it: launches while capturing go into the
// recording, and a synchronisation during capture fails the capture.
import { CudaContext } from '../../../src/backend/cuda/context.ts';
import type { CudaDriver, DevicePointer, Handle, LaunchShape } from '../../../src/backend/cuda/driver.ts';
import type { KernelArguments } from '../../../src/backend/cuda/kernelArguments.ts';
import { MemoryPool } from '../../../src/backend/cuda/memory.ts';
import { type KernelName, observeLaunches } from '../../../src/backend/cuda/ops/launch.ts';
import { ContextStreams } from '../../../src/backend/cuda/streams.ts';

export interface RecordedLaunch {
  readonly name: string;
  readonly shape: LaunchShape;
  /** The argument bytes in order (8 per slot, little-endian), read at launch. */
  readonly words: DataView;
  readonly captured: boolean;
}

const ALIGNMENT = 256;

export class FakeDriver {
  private readonly memory = new Map<DevicePointer, Uint8Array>();
  private next: DevicePointer = 0x1000_0000n;
  private capturing = false;
  private captureFailed = false;
  readonly launches: RecordedLaunch[] = [];
  readonly events: string[] = [];
  private pendingArguments: DataView | undefined;
  private readonly queued: (() => void)[] = [];
  private readonly recorded = new Map<Handle, number>();
  private eventCount = 0;

  allocateDevice(bytes: number): DevicePointer {
    const pointer = this.next;
    this.memory.set(pointer, new Uint8Array(bytes));
    this.next += BigInt(Math.ceil(bytes / ALIGNMENT) * ALIGNMENT + ALIGNMENT);
    this.events.push(`allocate ${bytes}`);
    return pointer;
  }

  freeDevice(pointer: DevicePointer): void {
    this.memory.delete(pointer);
  }

  /** The host bytes behind [pointer, pointer + bytes). */
  bytes(pointer: DevicePointer, bytes: number): Uint8Array {
    for (const [base, storage] of this.memory) {
      const offset = Number(pointer - base);
      if (offset >= 0 && offset + bytes <= storage.length) return storage.subarray(offset, offset + bytes);
    }
    throw new RangeError(`no allocation holds ${bytes} bytes at 0x${pointer.toString(16)}`);
  }

  /** A copy from pinned memory (a pointer into this driver's memory) runs late, as the real one may: at the next
   *  synchronisation or stream operation that depends on it; a copy from a typed array runs at once. */
  copyHostToDevice(destination: DevicePointer, source: ArrayBufferView | DevicePointer, bytes: number): void {
    this.stage('copy host to device');
    if (typeof source === 'bigint') {
      this.queued.push(() => this.bytes(destination, bytes).set(this.bytes(source, bytes)));
      return;
    }
    this.flush();
    this.bytes(destination, bytes).set(new Uint8Array(source.buffer, source.byteOffset, bytes));
  }

  /** Into a typed array at once, or into pinned memory (a pointer into this driver's memory) late, as the real
   *  one may: at the next synchronisation or stream operation that depends on it. */
  copyDeviceToHost(destination: ArrayBufferView | DevicePointer, source: DevicePointer, bytes: number): void {
    if (typeof destination === 'bigint') {
      this.stage('copy device to pinned host');
      this.queued.push(() => this.bytes(destination, bytes).set(this.bytes(source, bytes).slice()));
      return;
    }
    this.stage('copy device to host');
    this.flush();
    new Uint8Array(destination.buffer, destination.byteOffset, bytes).set(this.bytes(source, bytes).slice());
  }

  copyDeviceToDevice(destination: DevicePointer, source: DevicePointer, bytes: number): void {
    this.stage('copy device to device');
    this.flush();
    this.bytes(destination, bytes).set(this.bytes(source, bytes).slice());
  }

  /** The context's one stream (the fake context never forks a side stream). */
  createStream(): Handle {
    return 2n;
  }

  destroyStream(): void {}

  streamWaitEvent(): void {}

  createEvent(): Handle {
    this.events.push('create event');
    return BigInt(++this.eventCount);
  }

  recordEvent(event: Handle): void {
    this.recorded.set(event, this.queued.length);
    this.events.push('record event');
  }

  /** Runs the late copies queued before the event was recorded. */
  synchronizeEvent(event: Handle): void {
    const before = this.recorded.get(event) ?? 0;
    for (const copy of this.queued.splice(0, before)) copy();
    for (const [other, position] of this.recorded) this.recorded.set(other, Math.max(0, position - before));
    this.events.push('synchronize event');
  }

  /** An event is done once the late copies queued before it have run (launches run at once). */
  eventDone(event: Handle): boolean {
    this.events.push('query event');
    return (this.recorded.get(event) ?? 0) === 0;
  }

  /** Every timed pair of events spans this long. */
  elapsedMilliseconds(): number {
    return 2.5;
  }

  destroyEvent(event: Handle): void {
    this.recorded.delete(event);
    this.events.push('destroy event');
  }

  /** Late copies still queued. */
  get queuedCopies(): number {
    return this.queued.length;
  }

  private flush(): void {
    for (const copy of this.queued.splice(0)) copy();
    for (const event of this.recorded.keys()) this.recorded.set(event, 0);
  }

  fillBytes(destination: DevicePointer, value: number, bytes: number): void {
    this.stage('fill bytes');
    this.flush();
    this.bytes(destination, bytes).fill(value);
  }

  fillWords(destination: DevicePointer, value: number, count: number): void {
    this.stage('fill words');
    this.flush();
    const target = this.bytes(destination, count * 4);
    new Uint32Array(target.buffer, target.byteOffset, count).fill(value >>> 0);
  }

  synchronizeStream(): void {
    this.flush();
    if (this.capturing) {
      this.captureFailed = true;
      throw new Error('cuStreamSynchronize: operation not permitted when stream is capturing');
    }
    this.events.push('synchronize');
  }

  setMaxDynamicSharedBytes(): void {}
  setPreferredSharedCarveout(): void {}

  launch(_kernel: Handle, shape: LaunchShape, _stream: Handle, _parameters: BigUint64Array, name: string): void {
    this.launches.push({ name, shape, words: this.pendingArguments!, captured: this.capturing });
    this.events.push(`${this.capturing ? 'record' : 'launch'} ${name}`);
  }

  launchEx(kernel: Handle, shape: LaunchShape, stream: Handle, parameters: BigUint64Array, _a: unknown, name: string) {
    this.launch(kernel, shape, stream, parameters, name);
  }

  beginCapture(): void {
    this.capturing = true;
    this.captureFailed = false;
    this.events.push('begin capture');
  }

  endCapture(): Handle {
    this.capturing = false;
    this.events.push('end capture');
    if (this.captureFailed) throw new Error('cuStreamEndCapture: capture invalidated');
    return 0x77n;
  }

  instantiateGraph(): Handle {
    this.events.push('instantiate');
    return 0x78n;
  }

  updateGraph(): boolean {
    this.events.push('update');
    return true;
  }

  launchGraph(): void {
    this.events.push('launch graph');
  }

  destroyGraph(): void {}
  destroyGraphExecutable(): void {}

  /** Called by the launch observer just before each launch, with the arguments the launcher built. */
  observe(args: KernelArguments): void {
    this.pendingArguments = (args as unknown as { view: DataView }).view;
  }

  /** Device operations other than launches are refused while capturing only where the driver refuses them. */
  private stage(what: string): void {
    this.events.push(this.capturing ? `record ${what}` : what);
  }
}

/** A context whose driver is `driver` and whose kernels are names only. */
export function fakeContext(driver: FakeDriver): CudaContext {
  const cuda = Object.create(CudaContext.prototype) as CudaContext;
  const handles = new Map<string, Handle>();
  const kernels = {
    kernel(family: string, name: string): Handle {
      const key = `${family}/${name}`;
      if (!handles.has(key)) handles.set(key, BigInt(handles.size + 1));
      return handles.get(key)!;
    },
    prepareOnce(kernel: Handle, prepare: (driver: CudaDriver, kernel: Handle) => void): void {
      prepare(driver as unknown as CudaDriver, kernel);
    },
  };
  const memory = new MemoryPool(
    {
      allocate: (_kind, bytes) => driver.allocateDevice(bytes),
      release: (_kind, pointer) => driver.freeDevice(pointer),
    },
    { deviceBytes: 1 << 30, pinnedHostBytes: 1 << 20 },
  );
  // Its alongside() parts run one after the other on the one stream.
  const streams = new ContextStreams(driver as unknown as CudaDriver, false);
  const pinnedView = (pointer: bigint, bytes: number) => driver.bytes(pointer, bytes);
  Object.assign(cuda, { driver, device: 0, context: 1n, streams, memory, kernels, pinnedView });
  return cuda;
}

/** Installs the observer that hands each launch's arguments to `driver`; returns the remover. */
export function observeArguments(driver: FakeDriver): () => void {
  const previous = observeLaunches((_kernel: KernelName, _handle: Handle, args: KernelArguments) =>
    driver.observe(args),
  );
  return () => {
    observeLaunches(previous);
  };
}
