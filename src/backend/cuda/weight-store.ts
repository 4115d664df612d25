// The cuda backend's weight store for a streamed load: one device allocation per block (under the allocation limit),
// filled by async copies from two pinned host slots; a fence is an event after the copies, so a slot is refilled
// only once the device has read it. Tensors handed out are pieces of their block: the backend gives them back
// (releaseWeights) one by one, and the allocation is freed with its last piece.
import type { DType, StreamSlots, WeightBlock, WeightStore } from '../types.ts';
import type { CudaContext } from './context.ts';
import type { Allocation } from './memory.ts';
import type { CudaBuffer, CudaTensor } from './tensors.ts';
import { shapeElements } from './tensors.ts';

interface DeviceBlock extends WeightBlock {
  readonly allocation: Allocation;
  /** Tensors over the block the model still holds, and where they start. */
  live: number;
  readonly pieces: Set<bigint>;
}

export class CudaWeightStore implements WeightStore<CudaBuffer> {
  private readonly blocks = new Map<bigint, DeviceBlock>();
  /** The block of every tensor handed out, by its first byte (a block's tensors are given back by pointer). */
  private readonly pieces = new Map<bigint, DeviceBlock>();
  /** Where the pinned slots lie: the host address of the first byte of `bytes` within its ArrayBuffer. */
  private readonly slotAddresses = new WeakMap<ArrayBufferLike, { pointer: bigint; byteOffset: number }>();

  /**
   * `addWeightOwner`: how the backend learns to give tensors of this store back here (CudaBackend.addWeightOwner).
   * `hostBytes`: the bytes of pinned memory as a typed array (the context's pinnedView; a test's driver has its own).
   */
  constructor(
    private readonly cuda: CudaContext,
    addWeightOwner: (giveBack: (pointer: bigint) => boolean) => void,
    private readonly hostBytes: (pointer: bigint, bytes: number) => Uint8Array = (pointer, bytes) =>
      cuda.pinnedView(pointer, bytes),
  ) {
    addWeightOwner((pointer) => this.giveBack(pointer));
  }

  slots(bytes: number): StreamSlots {
    const pinned = this.cuda.memory.allocate('pinned-host', 2 * bytes, 'checkpoint stream slots');
    const whole = this.hostBytes(pinned.pointer, 2 * bytes);
    this.slotAddresses.set(whole.buffer, { pointer: pinned.pointer, byteOffset: whole.byteOffset });
    return { slots: [whole.subarray(0, bytes), whole.subarray(bytes)], free: () => pinned.free() };
  }

  reserve(bytes: number, label: string): DeviceBlock {
    const allocation = this.cuda.allocate(Math.max(bytes, 1), label);
    const block = { bytes, label, allocation, live: 0, pieces: new Set<bigint>() };
    this.blocks.set(allocation.pointer, block);
    return block;
  }

  write(block: WeightBlock, offset: number, source: Uint8Array): void {
    const base = this.slotAddresses.get(source.buffer);
    const { driver, stream } = this.cuda;
    const target = (block as DeviceBlock).allocation.pointer + BigInt(offset);
    // A pinned source is copied asynchronously; any other host bytes are copied before this returns.
    if (base === undefined) {
      driver.copyHostToDevice(target, source, source.byteLength, stream);
      driver.synchronizeStream(stream);
      return;
    }
    const address = base.pointer + BigInt(source.byteOffset - base.byteOffset);
    driver.copyHostToDevice(target, address, source.byteLength, stream);
  }

  fence(): () => void {
    const { driver, stream } = this.cuda;
    const event = driver.createEvent(false);
    driver.recordEvent(event, stream);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      try {
        driver.synchronizeEvent(event);
      } finally {
        driver.destroyEvent(event);
      }
    };
  }

  tensor(block: WeightBlock, offset: number, dtype: DType, shape: readonly number[]): CudaTensor {
    const device = block as DeviceBlock;
    const elements = shapeElements(shape);
    const pointer = device.allocation.pointer + BigInt(offset);
    device.live += 1;
    device.pieces.add(pointer);
    this.pieces.set(pointer, device);
    return { dtype, shape: [...shape], data: { pointer, dtype, elements } };
  }

  gatherRows(block: WeightBlock, offset: number, rowBytes: number, ids: Int32Array, label: string): DeviceBlock {
    const source = (block as DeviceBlock).allocation.pointer + BigInt(offset);
    const gathered = this.reserve(ids.length * rowBytes, label);
    const { driver, stream } = this.cuda;
    // One copy per run of consecutive ids (the semantic ids are one run).
    for (let start = 0; start < ids.length; ) {
      let end = start + 1;
      while (end < ids.length && ids[end] === ids[end - 1]! + 1) end++;
      const to = gathered.allocation.pointer + BigInt(start * rowBytes);
      driver.copyDeviceToDevice(to, source + BigInt(ids[start]! * rowBytes), (end - start) * rowBytes, stream);
      start = end;
    }
    return gathered;
  }

  release(block: WeightBlock): void {
    this.cuda.synchronize();
    this.free(block as DeviceBlock);
  }

  /** Device bytes of the blocks held now. */
  get heldBytes(): number {
    let bytes = 0;
    for (const block of this.blocks.values()) bytes += block.allocation.bytes;
    return bytes;
  }

  /** Gives back one tensor over a block of this store (after the caller's wait for the device); false when none
   *  holds `pointer`. */
  private giveBack(pointer: bigint): boolean {
    const block = this.pieces.get(pointer);
    if (block === undefined) return false;
    block.live -= 1;
    if (block.live <= 0) this.free(block);
    return true;
  }

  private free(block: DeviceBlock): void {
    if (!this.blocks.delete(block.allocation.pointer)) return;
    for (const pointer of block.pieces) this.pieces.delete(pointer);
    block.allocation.free();
  }
}
