// The cpu backend's weight store for a streamed load: each tensor's bytes in their own host array, copied from the
// slot as it arrives (so a slot is free again at once), handed to the backend as stored elements (fromHost).
import { alignedHostBuffers, storedElementsView } from '../aligned-host.ts';
import type { Backend, DType, StreamSlots, WeightBlock, WeightStore } from '../types.ts';
import type { CpuBuffer, CpuTensor } from './tensors.ts';

interface HostBlock extends WeightBlock {
  readonly data: Uint8Array;
}

export class CpuWeightStore implements WeightStore<CpuBuffer> {
  /** Slot bytes held now and at most (the stream's host memory besides the weights themselves). */
  slotBytes = 0;
  peakSlotBytes = 0;

  constructor(private readonly backend: Pick<Backend<CpuBuffer>, 'fromHost'>) {}

  slots(bytes: number): StreamSlots {
    const held = alignedHostBuffers(2, bytes);
    this.slotBytes += 2 * bytes;
    this.peakSlotBytes = Math.max(this.peakSlotBytes, this.slotBytes);
    let freed = false;
    return {
      slots: held.buffers,
      free: () => {
        if (freed) return;
        freed = true;
        held.free();
        this.slotBytes -= 2 * bytes;
      },
    };
  }

  reserve(bytes: number, label: string): HostBlock {
    return { bytes, label, data: new Uint8Array(bytes) };
  }

  write(block: WeightBlock, offset: number, source: Uint8Array): void {
    (block as HostBlock).data.set(source, offset);
  }

  fence(): () => void {
    return () => {};
  }

  tensor(block: WeightBlock, offset: number, dtype: DType, shape: readonly number[]): CpuTensor {
    const count = shape.reduce((product, size) => product * size, 1);
    return this.backend.fromHost(dtype, shape, storedElementsView((block as HostBlock).data, offset, dtype, count));
  }

  gatherRows(block: WeightBlock, offset: number, rowBytes: number, ids: Int32Array, label: string): HostBlock {
    const source = (block as HostBlock).data.subarray(offset);
    const gathered = this.reserve(ids.length * rowBytes, label);
    ids.forEach((id, row) => {
      gathered.data.set(source.subarray(id * rowBytes, (id + 1) * rowBytes), row * rowBytes);
    });
    return gathered;
  }

  release(): void {}
}
