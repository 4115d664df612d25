// Device buffers for the GPU benches: random values tiled from one host block, every allocation held until
// `release`, and the number of weight sets a rotation needs to stream from memory rather than L2.
import type { CudaContext } from '../../src/backend/cuda/context.ts';
import type { Allocation } from '../../src/backend/cuda/memory.ts';
import { float32ToBf16Bits } from '../../src/numeric/dtypes.ts';

export const MiB = 1024 * 1024;

/** A standard normal sample (Box–Muller). */
export function normalSample(): number {
  return Math.sqrt(-2 * Math.log(1 - Math.random())) * Math.cos(2 * Math.PI * Math.random());
}

/** 16 MiB of random normal bf16 values times `scale`. */
export function randomBf16Block(scale = 1): Uint16Array {
  return new Uint16Array(8 * MiB).map(() => float32ToBf16Bits(normalSample() * scale));
}

/** How many weight sets of `bytesPerSet` a rotation needs so that it spans four L2s, and at least `minimum`. */
export function rotationSets(cuda: CudaContext, bytesPerSet: number, minimum = 2): number {
  return Math.max(minimum, Math.ceil((4 * cuda.properties.l2CacheBytes) / bytesPerSet));
}

/** Every allocation a bench makes, so one call frees them all. */
export class DeviceBuffers {
  private readonly held: Allocation[] = [];

  constructor(private readonly cuda: CudaContext) {}

  allocate(bytes: number, label: string): Allocation {
    const allocation = this.cuda.allocate(bytes, label);
    this.held.push(allocation);
    return allocation;
  }

  upload(values: ArrayBufferView, label: string): Allocation {
    const allocation = this.cuda.upload(values, label);
    this.held.push(allocation);
    return allocation;
  }

  /** A buffer of `bytes` holding `block` (a host typed array) tiled over it: one upload, then device copies. */
  tiled(bytes: number, block: Uint8Array | Uint16Array, label: string): Allocation {
    const allocation = this.allocate(bytes, label);
    const elements = Math.min(bytes / block.BYTES_PER_ELEMENT, block.length);
    const head = block.subarray(0, elements);
    const { driver, stream } = this.cuda;
    driver.copyHostToDevice(allocation.pointer, head, head.byteLength, stream);
    for (let offset = head.byteLength; offset < bytes; offset += head.byteLength) {
      const chunk = Math.min(head.byteLength, bytes - offset);
      driver.copyDeviceToDevice(allocation.pointer + BigInt(offset), allocation.pointer, chunk, stream);
    }
    this.cuda.synchronize();
    return allocation;
  }

  /** Frees one allocation early and stops holding it. */
  free(allocation: Allocation): void {
    const index = this.held.indexOf(allocation);
    if (index >= 0) this.held.splice(index, 1);
    allocation.free();
  }

  release(): void {
    for (const allocation of this.held.splice(0)) allocation.free();
  }
}
