// A CudaContext over a host imitation of the driver, for what the cuda backend does without a GPU: device memory is
// host bytes (allocation, copies and 8/32-bit fills really happen), kernel launches are recorded by name with their
// arguments (never run), and stream capture is imitated as the driver does it: launches while capturing go into the
// recording, and a synchronisation during capture fails the capture.
import { CudaContext } from '../../../src/backend/cuda/context.ts';
import type { CudaDriver, DevicePointer, Handle, LaunchShape } from '../../../src/backend/cuda/driver.ts';
import type { KernelArguments } from '../../../src/backend/cuda/kernelArguments.ts';
import { MemoryPool } from '../../../src/backend/cuda/memory.ts';
import { type KernelName, observeLaunches } from '../../../src/backend/cuda/ops/launch.ts';

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

  copyHostToDevice(destination: DevicePointer, source: ArrayBufferView, bytes: number): void {
    this.stage('copy host to device');
    this.bytes(destination, bytes).set(new Uint8Array(source.buffer, source.byteOffset, bytes));
  }

  copyDeviceToHost(destination: ArrayBufferView, source: DevicePointer, bytes: number): void {
    this.stage('copy device to host');
    new Uint8Array(destination.buffer, destination.byteOffset, bytes).set(this.bytes(source, bytes));
  }

  copyDeviceToDevice(destination: DevicePointer, source: DevicePointer, bytes: number): void {
    this.stage('copy device to device');
    this.bytes(destination, bytes).set(this.bytes(source, bytes).slice());
  }

  fillBytes(destination: DevicePointer, value: number, bytes: number): void {
    this.stage('fill bytes');
    this.bytes(destination, bytes).fill(value);
  }

  fillWords(destination: DevicePointer, value: number, count: number): void {
    this.stage('fill words');
    const target = this.bytes(destination, count * 4);
    new Uint32Array(target.buffer, target.byteOffset, count).fill(value >>> 0);
  }

  synchronizeStream(): void {
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
  Object.assign(cuda, { driver, device: 0, context: 1n, stream: 2n, memory, kernels });
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
