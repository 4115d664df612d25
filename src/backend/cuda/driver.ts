// CUDA driver API bindings (libcuda.so.1) through koffi. Every call's CUresult is checked and a failure thrown as a
// DramaError whose code is the driver's own name for it (CUDA_ERROR_OUT_OF_MEMORY, ...), kind 'device'.
// Versioned symbols are bound by their versioned names (cuMemAlloc_v2, cuStreamBeginCapture_v2, ...): the plain
// names link the old ABIs. Handles are BigInt pointers; device pointers (CUdeviceptr) are BigInt.
import { DramaError } from '../../errors.ts';
import {
  addressOf,
  bindAll,
  type KoffiLibrary,
  type NativeFunction,
  type Signatures,
  toBigInt,
  tryLoadLibrary,
} from './library.ts';

export type Handle = bigint;
export type DevicePointer = bigint;
export type Dimensions = readonly [number, number, number];

/** Grid, block and dynamic shared memory of one launch. */
export interface LaunchShape {
  readonly grid: Dimensions;
  readonly block: Dimensions;
  readonly sharedBytes?: number;
  /** Thread-block cluster dimensions (compute capability 9.0 on), for a kernel whose blocks share their memory. */
  readonly cluster?: Dimensions;
}

/** Extra attributes for cuLaunchKernelEx: thread-block clusters and programmatic dependent launch. */
export interface LaunchAttributes {
  readonly clusterDimensions?: Dimensions;
  readonly programmaticStreamSerialization?: boolean;
}

export const DeviceAttribute = {
  multiprocessorCount: 16,
  l2CacheBytes: 38,
  computeCapabilityMajor: 75,
  computeCapabilityMinor: 76,
  maxSharedMemoryPerBlockOptIn: 97,
} as const;

export const CaptureMode = { global: 0, threadLocal: 1, relaxed: 2 } as const;

const FUNCTION_ATTRIBUTE_MAX_DYNAMIC_SHARED_BYTES = 8;
const FUNCTION_ATTRIBUTE_PREFERRED_SHARED_CARVEOUT = 9;
const STREAM_NON_BLOCKING = 1;
const EVENT_DISABLE_TIMING = 2;
/** cuEventQuery: the event's work is still running. */
const CUDA_ERROR_NOT_READY = 600;
const LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4;
const LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;
// CUlaunchConfig: 7 uint32 dims/shared, pad, CUstream at 32, attrs pointer at 40, numAttrs at 48; 56 bytes.
const LAUNCH_CONFIG_BYTES = 56;
// CUlaunchAttribute: int id, pad to 8, a 64-byte value union; 72 bytes.
const LAUNCH_ATTRIBUTE_BYTES = 72;

const SIGNATURES: Signatures = {
  cuInit: ['int', ['uint']],
  cuDriverGetVersion: ['int', ['_Out_ int*']],
  cuGetErrorName: ['int', ['int', '_Out_ const char**']],
  cuGetErrorString: ['int', ['int', '_Out_ const char**']],
  cuDeviceGetCount: ['int', ['_Out_ int*']],
  cuDeviceGet: ['int', ['_Out_ int*', 'int']],
  cuDeviceGetName: ['int', ['_Out_ uint8_t*', 'int', 'int']],
  cuDeviceGetAttribute: ['int', ['_Out_ int*', 'int', 'int']],
  cuDeviceTotalMem_v2: ['int', ['_Out_ size_t*', 'int']],
  cuDevicePrimaryCtxRetain: ['int', ['_Out_ void**', 'int']],
  cuDevicePrimaryCtxRelease_v2: ['int', ['int']],
  cuCtxSetCurrent: ['int', ['void*']],
  cuCtxSynchronize: ['int', []],
  cuProfilerStart: ['int', []],
  cuProfilerStop: ['int', []],
  cuMemGetInfo_v2: ['int', ['_Out_ size_t*', '_Out_ size_t*']],
  cuMemAlloc_v2: ['int', ['_Out_ uint64_t*', 'size_t']],
  cuMemFree_v2: ['int', ['uint64_t']],
  cuMemHostAlloc: ['int', ['_Out_ void**', 'size_t', 'uint']],
  cuMemFreeHost: ['int', ['void*']],
  cuMemcpyHtoDAsync_v2: ['int', ['uint64_t', 'void*', 'size_t', 'void*']],
  cuMemcpyDtoHAsync_v2: ['int', ['void*', 'uint64_t', 'size_t', 'void*']],
  cuMemcpyDtoDAsync_v2: ['int', ['uint64_t', 'uint64_t', 'size_t', 'void*']],
  cuMemsetD8Async: ['int', ['uint64_t', 'uint8_t', 'size_t', 'void*']],
  cuMemsetD32Async: ['int', ['uint64_t', 'uint', 'size_t', 'void*']],
  cuStreamCreate: ['int', ['_Out_ void**', 'uint']],
  cuStreamCreateWithPriority: ['int', ['_Out_ void**', 'uint', 'int']],
  cuCtxGetStreamPriorityRange: ['int', ['_Out_ int*', '_Out_ int*']],
  cuStreamDestroy_v2: ['int', ['void*']],
  cuStreamSynchronize: ['int', ['void*']],
  cuStreamWaitEvent: ['int', ['void*', 'void*', 'uint']],
  cuEventCreate: ['int', ['_Out_ void**', 'uint']],
  cuEventDestroy_v2: ['int', ['void*']],
  cuEventRecord: ['int', ['void*', 'void*']],
  cuEventSynchronize: ['int', ['void*']],
  cuEventQuery: ['int', ['void*']],
  cuEventElapsedTime_v2: ['int', ['_Out_ float*', 'void*', 'void*']],
  cuModuleLoadData: ['int', ['_Out_ void**', 'void*']],
  cuModuleUnload: ['int', ['void*']],
  cuModuleGetFunction: ['int', ['_Out_ void**', 'void*', 'str']],
  cuFuncSetAttribute: ['int', ['void*', 'int', 'int']],
  cuFuncGetParamInfo: ['int', ['void*', 'size_t', '_Out_ size_t*', '_Out_ size_t*']],
  cuLaunchKernel: ['int', ['void*', 'uint', 'uint', 'uint', 'uint', 'uint', 'uint', 'uint', 'void*', 'void*', 'void*']],
  cuLaunchKernelEx: ['int', ['void*', 'void*', 'void*', 'void*']],
  cuStreamBeginCapture_v2: ['int', ['void*', 'int']],
  cuStreamEndCapture: ['int', ['void*', '_Out_ void**']],
  cuStreamIsCapturing: ['int', ['void*', '_Out_ int*']],
  cuGraphInstantiateWithFlags: ['int', ['_Out_ void**', 'void*', 'uint64_t']],
  cuGraphLaunch: ['int', ['void*', 'void*']],
  cuGraphExecUpdate_v2: ['int', ['void*', 'void*', 'void*']],
  cuGraphDestroy: ['int', ['void*']],
  cuGraphExecDestroy: ['int', ['void*']],
};

type Native = Record<keyof typeof SIGNATURES, NativeFunction>;

let cached: { driver: CudaDriver } | { reason: string } | undefined;

/** Whether a CUDA device can be used here, and if not, why (no libcuda.so.1, no device, driver error). */
export function cudaAvailability(): { available: true } | { available: false; reason: string } {
  if (cached === undefined) {
    try {
      cached = { driver: openDriver() };
    } catch (error) {
      cached = { reason: (error as Error).message };
    }
  }
  return 'driver' in cached ? { available: true } : { available: false, reason: cached.reason };
}

/** The process-wide driver binding; throws CUDA_UNAVAILABLE (naming the reason) when there is no usable device. */
export function loadDriver(): CudaDriver {
  const availability = cudaAvailability();
  if (!availability.available) {
    throw new DramaError('CUDA_UNAVAILABLE', `CUDA is not available: ${availability.reason}`, { kind: 'device' });
  }
  return (cached as { driver: CudaDriver }).driver;
}

function openDriver(): CudaDriver {
  const opened = tryLoadLibrary(['libcuda.so.1']);
  if ('reason' in opened) throw new Error(`no libcuda.so.1 (${opened.reason})`);
  const driver = new CudaDriver(opened.library);
  driver.init();
  if (driver.deviceCount() === 0) throw new Error('libcuda.so.1 loaded but it reports no CUDA device');
  return driver;
}

export class CudaDriver {
  private readonly native: Native;

  constructor(library: KoffiLibrary) {
    this.native = bindAll(library, SIGNATURES);
  }

  /** Throws the named DramaError for a non-zero CUresult. */
  private check(result: number, call: string): void {
    if (result === 0) return;
    const name = [''];
    const description = [''];
    const named = this.native.cuGetErrorName!(result, name) === 0 ? name[0]! : `CUDA_ERROR_${result}`;
    const described = this.native.cuGetErrorString!(result, description) === 0 ? description[0]! : 'unknown error';
    throw new DramaError(named, `${call} failed: ${named} (${result}): ${described}`, { kind: 'device' });
  }

  private call(name: keyof Native, describe: string, ...args: unknown[]): void {
    this.check(this.native[name]!(...args), describe);
  }

  init(): void {
    this.call('cuInit', 'cuInit', 0);
  }

  driverVersion(): number {
    const version = [0];
    this.call('cuDriverGetVersion', 'cuDriverGetVersion', version);
    return version[0]!;
  }

  deviceCount(): number {
    const count = [0];
    this.call('cuDeviceGetCount', 'cuDeviceGetCount', count);
    return count[0]!;
  }

  device(ordinal: number): number {
    const device = [0];
    this.call('cuDeviceGet', `cuDeviceGet(${ordinal})`, device, ordinal);
    return device[0]!;
  }

  deviceName(device: number): string {
    const bytes = new Uint8Array(256);
    this.call('cuDeviceGetName', 'cuDeviceGetName', bytes, bytes.length, device);
    return Buffer.from(bytes).toString('latin1').replace(/\0.*$/s, '');
  }

  deviceAttribute(attribute: number, device: number): number {
    const value = [0];
    this.call('cuDeviceGetAttribute', `cuDeviceGetAttribute(${attribute})`, value, attribute, device);
    return value[0]!;
  }

  deviceTotalBytes(device: number): number {
    const bytes = [0];
    this.call('cuDeviceTotalMem_v2', 'cuDeviceTotalMem_v2', bytes, device);
    return Number(bytes[0]);
  }

  retainPrimaryContext(device: number): Handle {
    const context: unknown[] = [null];
    this.call('cuDevicePrimaryCtxRetain', 'cuDevicePrimaryCtxRetain', context, device);
    return toBigInt(context[0]);
  }

  releasePrimaryContext(device: number): void {
    this.call('cuDevicePrimaryCtxRelease_v2', 'cuDevicePrimaryCtxRelease_v2', device);
  }

  setCurrentContext(context: Handle): void {
    this.call('cuCtxSetCurrent', 'cuCtxSetCurrent', context);
  }

  synchronizeContext(): void {
    this.call('cuCtxSynchronize', 'cuCtxSynchronize');
  }

  /** Opens or closes the range a profiler started with `--profile-from-start off` records (no effect without one). */
  profilerRange(on: boolean): void {
    if (on) this.call('cuProfilerStart', 'cuProfilerStart');
    else this.call('cuProfilerStop', 'cuProfilerStop');
  }

  memoryInfo(): { freeBytes: number; totalBytes: number } {
    const free = [0];
    const total = [0];
    this.call('cuMemGetInfo_v2', 'cuMemGetInfo_v2', free, total);
    return { freeBytes: Number(free[0]), totalBytes: Number(total[0]) };
  }

  allocateDevice(bytes: number): DevicePointer {
    const pointer: unknown[] = [0];
    this.call('cuMemAlloc_v2', `cuMemAlloc_v2(${bytes} bytes)`, pointer, bytes);
    return toBigInt(pointer[0]);
  }

  freeDevice(pointer: DevicePointer): void {
    this.call('cuMemFree_v2', 'cuMemFree_v2', pointer);
  }

  allocatePinnedHost(bytes: number): Handle {
    const pointer: unknown[] = [null];
    this.call('cuMemHostAlloc', `cuMemHostAlloc(${bytes} bytes)`, pointer, bytes, 0);
    return toBigInt(pointer[0]);
  }

  freePinnedHost(pointer: Handle): void {
    this.call('cuMemFreeHost', 'cuMemFreeHost', pointer);
  }

  /** Host memory may be a typed array (koffi passes its address for the call) or a pinned pointer. */
  copyHostToDevice(destination: DevicePointer, source: ArrayBufferView | Handle, bytes: number, stream: Handle): void {
    this.call('cuMemcpyHtoDAsync_v2', `cuMemcpyHtoDAsync_v2(${bytes} bytes)`, destination, source, bytes, stream);
  }

  copyDeviceToHost(destination: ArrayBufferView | Handle, source: DevicePointer, bytes: number, stream: Handle): void {
    this.call('cuMemcpyDtoHAsync_v2', `cuMemcpyDtoHAsync_v2(${bytes} bytes)`, destination, source, bytes, stream);
  }

  copyDeviceToDevice(destination: DevicePointer, source: DevicePointer, bytes: number, stream: Handle): void {
    this.call('cuMemcpyDtoDAsync_v2', `cuMemcpyDtoDAsync_v2(${bytes} bytes)`, destination, source, bytes, stream);
  }

  fillBytes(destination: DevicePointer, value: number, bytes: number, stream: Handle): void {
    this.call('cuMemsetD8Async', 'cuMemsetD8Async', destination, value, bytes, stream);
  }

  /** Fills `count` 32-bit words with the bit pattern `value` (e.g. a NaN poison). */
  fillWords(destination: DevicePointer, value: number, count: number, stream: Handle): void {
    this.call('cuMemsetD32Async', 'cuMemsetD32Async', destination, value >>> 0, count, stream);
  }

  /** A non-blocking stream; `priority` as cuStreamCreateWithPriority counts it (lower runs first, 0 the default). */
  createStream(priority = 0): Handle {
    const stream: unknown[] = [null];
    if (priority === 0) this.call('cuStreamCreate', 'cuStreamCreate', stream, STREAM_NON_BLOCKING);
    else this.call('cuStreamCreateWithPriority', 'cuStreamCreateWithPriority', stream, STREAM_NON_BLOCKING, priority);
    return toBigInt(stream[0]);
  }

  /** The current context's stream priorities: `least` (the default, 0) and `greatest` (negative where supported). */
  streamPriorityRange(): { least: number; greatest: number } {
    const least = [0];
    const greatest = [0];
    this.call('cuCtxGetStreamPriorityRange', 'cuCtxGetStreamPriorityRange', least, greatest);
    return { least: least[0]!, greatest: greatest[0]! };
  }

  destroyStream(stream: Handle): void {
    this.call('cuStreamDestroy_v2', 'cuStreamDestroy_v2', stream);
  }

  synchronizeStream(stream: Handle): void {
    this.call('cuStreamSynchronize', 'cuStreamSynchronize', stream);
  }

  streamWaitEvent(stream: Handle, event: Handle): void {
    this.call('cuStreamWaitEvent', 'cuStreamWaitEvent', stream, event, 0);
  }

  createEvent(timing = true): Handle {
    const event: unknown[] = [null];
    this.call('cuEventCreate', 'cuEventCreate', event, timing ? 0 : EVENT_DISABLE_TIMING);
    return toBigInt(event[0]);
  }

  destroyEvent(event: Handle): void {
    this.call('cuEventDestroy_v2', 'cuEventDestroy_v2', event);
  }

  recordEvent(event: Handle, stream: Handle): void {
    this.call('cuEventRecord', 'cuEventRecord', event, stream);
  }

  synchronizeEvent(event: Handle): void {
    this.call('cuEventSynchronize', 'cuEventSynchronize', event);
  }

  /** Whether the work before the event's record has finished (never waits). */
  eventDone(event: Handle): boolean {
    const result = this.native.cuEventQuery!(event) as number;
    if (result === CUDA_ERROR_NOT_READY) return false;
    this.check(result, 'cuEventQuery');
    return true;
  }

  elapsedMilliseconds(start: Handle, end: Handle): number {
    const milliseconds = [0];
    this.call('cuEventElapsedTime_v2', 'cuEventElapsedTime_v2', milliseconds, start, end);
    return milliseconds[0]!;
  }

  /** Loads a fatbin (or cubin/PTX) image already in memory. */
  loadModule(image: Uint8Array, label: string): Handle {
    const module: unknown[] = [null];
    this.call('cuModuleLoadData', `cuModuleLoadData(${label})`, module, image);
    return toBigInt(module[0]);
  }

  unloadModule(module: Handle): void {
    this.call('cuModuleUnload', 'cuModuleUnload', module);
  }

  moduleFunction(module: Handle, name: string): Handle {
    const kernel: unknown[] = [null];
    this.call('cuModuleGetFunction', `cuModuleGetFunction(${name})`, kernel, module, name);
    return toBigInt(kernel[0]);
  }

  setMaxDynamicSharedBytes(kernel: Handle, bytes: number): void {
    this.call('cuFuncSetAttribute', 'cuFuncSetAttribute', kernel, FUNCTION_ATTRIBUTE_MAX_DYNAMIC_SHARED_BYTES, bytes);
  }

  /** Asks for `percent` of the unified L1/shared storage as shared memory when this kernel runs. */
  setPreferredSharedCarveout(kernel: Handle, percent: number): void {
    this.call(
      'cuFuncSetAttribute',
      'cuFuncSetAttribute',
      kernel,
      FUNCTION_ATTRIBUTE_PREFERRED_SHARED_CARVEOUT,
      percent,
    );
  }

  /** Offset and byte size of each of the kernel's parameters, in order (cuFuncGetParamInfo, CUDA 12.4 and later). */
  parameterLayout(kernel: Handle): { offset: number; size: number }[] {
    const CUDA_ERROR_INVALID_VALUE = 1;
    const MAXIMUM_PARAMETERS = 256;
    const layout: { offset: number; size: number }[] = [];
    for (let index = 0; index < MAXIMUM_PARAMETERS; index++) {
      const offset = [0];
      const size = [0];
      const result = this.native.cuFuncGetParamInfo!(kernel, index, offset, size);
      // The first index past the last parameter is refused as an invalid value.
      if (result === CUDA_ERROR_INVALID_VALUE) break;
      this.check(result, `cuFuncGetParamInfo(${index})`);
      layout.push({ offset: Number(offset[0]), size: Number(size[0]) });
    }
    return layout;
  }

  /** `parameters` holds one address per kernel argument, each pointing at that argument's value. */
  launch(kernel: Handle, shape: LaunchShape, stream: Handle, parameters: BigUint64Array, name: string): void {
    const [gx, gy, gz] = shape.grid;
    const [bx, by, bz] = shape.block;
    const result = this.native.cuLaunchKernel!(
      kernel,
      gx,
      gy,
      gz,
      bx,
      by,
      bz,
      shape.sharedBytes ?? 0,
      stream,
      parameters,
      null,
    );
    this.check(result, `cuLaunchKernel(${name}, grid ${shape.grid.join('x')}, block ${shape.block.join('x')})`);
  }

  /** cuLaunchKernelEx with optional cluster dimensions and programmatic dependent launch. */
  launchEx(
    kernel: Handle,
    shape: LaunchShape,
    stream: Handle,
    parameters: BigUint64Array,
    attributes: LaunchAttributes,
    name: string,
  ): void {
    const entries: Array<(view: DataView, offset: number) => void> = [];
    if (attributes.clusterDimensions) {
      const [cx, cy, cz] = attributes.clusterDimensions;
      entries.push((view, offset) => {
        view.setInt32(offset, LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, true);
        view.setUint32(offset + 8, cx, true);
        view.setUint32(offset + 12, cy, true);
        view.setUint32(offset + 16, cz, true);
      });
    }
    if (attributes.programmaticStreamSerialization !== undefined) {
      const allowed = attributes.programmaticStreamSerialization ? 1 : 0;
      entries.push((view, offset) => {
        view.setInt32(offset, LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, true);
        view.setInt32(offset + 8, allowed, true);
      });
    }
    const attributeBytes = new Uint8Array(new ArrayBuffer(Math.max(1, entries.length) * LAUNCH_ATTRIBUTE_BYTES));
    const attributeView = new DataView(attributeBytes.buffer);
    entries.forEach((write, index) => {
      write(attributeView, index * LAUNCH_ATTRIBUTE_BYTES);
    });
    const config = new Uint8Array(new ArrayBuffer(LAUNCH_CONFIG_BYTES));
    const view = new DataView(config.buffer);
    [...shape.grid, ...shape.block, shape.sharedBytes ?? 0].forEach((value, index) => {
      view.setUint32(index * 4, value, true);
    });
    view.setBigUint64(32, stream, true);
    view.setBigUint64(40, entries.length > 0 ? addressOf(attributeBytes) : 0n, true);
    view.setUint32(48, entries.length, true);
    this.check(this.native.cuLaunchKernelEx!(config, kernel, parameters, null), `cuLaunchKernelEx(${name})`);
  }

  beginCapture(stream: Handle, mode: number = CaptureMode.threadLocal): void {
    this.call('cuStreamBeginCapture_v2', 'cuStreamBeginCapture_v2', stream, mode);
  }

  endCapture(stream: Handle): Handle {
    const graph: unknown[] = [null];
    this.call('cuStreamEndCapture', 'cuStreamEndCapture', stream, graph);
    return toBigInt(graph[0]);
  }

  isCapturing(stream: Handle): boolean {
    const status = [0];
    this.call('cuStreamIsCapturing', 'cuStreamIsCapturing', stream, status);
    return status[0] !== 0;
  }

  instantiateGraph(graph: Handle): Handle {
    const executable: unknown[] = [null];
    this.call('cuGraphInstantiateWithFlags', 'cuGraphInstantiateWithFlags', executable, graph, 0);
    return toBigInt(executable[0]);
  }

  launchGraph(executable: Handle, stream: Handle): void {
    this.call('cuGraphLaunch', 'cuGraphLaunch', executable, stream);
  }

  /** Updates an instantiated graph in place from a graph of the same topology; false when the driver refuses. */
  updateGraph(executable: Handle, graph: Handle): boolean {
    // CUgraphExecUpdateResultInfo: result (int), errorNode, errorFromNode: 24 bytes.
    const info = new Uint8Array(new ArrayBuffer(24));
    const result = this.native.cuGraphExecUpdate_v2!(executable, graph, info);
    if (result === 0) return true;
    const CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE = 910;
    if (result === CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) return false;
    this.check(result, 'cuGraphExecUpdate_v2');
    return false;
  }

  destroyGraph(graph: Handle): void {
    this.call('cuGraphDestroy', 'cuGraphDestroy', graph);
  }

  destroyGraphExecutable(executable: Handle): void {
    this.call('cuGraphExecDestroy', 'cuGraphExecDestroy', executable);
  }
}
