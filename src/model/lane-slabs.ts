// Every lane's state, in slabs indexed by lane slot and sized once by plan (docs/exactness.md): backbone K/V of the
// attention layers, Gated DeltaNet conv + recurrent state, the tower's per-layer K/V, the sampler's RAS window and
// each slot's pending frame record (the backbone input row of its next step, as (token, code[0..K−1])). Slot S − 1
// (one past the lanes) is the planning slot, where plan runs each bucket once to size the scratch.
import { type Backend, type KeyValueSlab, RAS_WINDOW, type Tensor } from '../backend/types.ts';
import type { Backbone, BackboneSlabs } from './backbone.ts';
import type { Tower } from './tower.ts';

/** A slot's state after a prefill, copied out (the reference cache's entry): each slab's first `rows` rows. */
export interface LaneSnapshot<B> {
  readonly promptRows: number;
  readonly promptComplete: boolean;
  /** Rows of K/V held (the backbone and tower have run rows [0, rows)). */
  readonly rows: number;
  /** Every slab of the set, in LaneSlabs.all() order, as one-slot tensors. */
  readonly parts: readonly Tensor<B>[];
  /** Bytes the copies hold (what the reference cache counts). */
  readonly bytes: number;
}

const BYTES: Record<Tensor<unknown>['dtype'], number> = { bf16: 2, f16: 2, f32: 4, e4m3: 1, i32: 4 };

export class LaneSlabs<B> {
  readonly backbone: BackboneSlabs<B>;
  readonly tower: KeyValueSlab<B>[];
  /** int32 [S, 16], −1 = empty. */
  readonly rasWindow: Tensor<B>;
  /** int32 [S, 1 + K]. */
  readonly pending: Tensor<B>;

  constructor(
    private readonly backend: Backend<B>,
    backbone: Backbone<B>,
    tower: Tower<B>,
    readonly slots: number,
    readonly rowsPerSlot: number,
    recordWidth: number,
  ) {
    this.backbone = backbone.allocateSlabs(slots, rowsPerSlot);
    this.tower = tower.allocateSlabs(slots, rowsPerSlot);
    this.rasWindow = backend.allocate('i32', [slots, RAS_WINDOW]);
    this.pending = backend.allocate('i32', [slots, recordWidth]);
    for (let slot = 0; slot < slots; slot++) backend.fillSlot(this.rasWindow, slot, -1);
  }

  /** Slabs whose rows are positions (K/V), then per-slot state (conv, recurrent, RAS window, pending record). */
  private kinds(): { rowed: Tensor<B>[]; whole: Tensor<B>[] } {
    const rowed: Tensor<B>[] = [];
    const whole: Tensor<B>[] = [];
    for (const slab of [...this.backbone.keyValues, ...this.tower]) if (slab) rowed.push(slab.keys, slab.values);
    for (const slab of this.backbone.deltaNets) if (slab) whole.push(slab.conv, slab.recurrent);
    whole.push(this.rasWindow, this.pending);
    return { rowed, whole };
  }

  /** A fresh lane's state: zero conv and recurrent state, an empty RAS window (K/V rows are written before read). */
  reset(slot: number): void {
    for (const slab of this.backbone.deltaNets) {
      if (slab === undefined) continue;
      this.backend.fillSlot(slab.conv, slot, 0);
      this.backend.fillSlot(slab.recurrent, slot, 0);
    }
    this.backend.fillSlot(this.rasWindow, slot, -1);
    this.backend.fillSlot(this.pending, slot, -1);
  }

  /** Each slab's copy of one slot: its shape, and its bytes as the slab stores them. */
  private snapshotParts(rows: number): { slab: Tensor<B>; count: number; shape: number[]; bytes: number }[] {
    const { rowed, whole } = this.kinds();
    const part = (slab: Tensor<B>, count: number, shape: number[]) => {
      // Host storage states its own size (the cpu holds bf16 values in fp32); device storage counts its dtype.
      const data = slab.data as unknown;
      const perElement = ArrayBuffer.isView(data)
        ? data.byteLength / slab.shape.reduce((product, size) => product * size, 1)
        : BYTES[slab.dtype];
      return { slab, count, shape, bytes: shape.reduce((product, size) => product * size, perElement) };
    };
    return [
      ...rowed.map((slab) => part(slab, rows, [1, rows, ...slab.shape.slice(2)])),
      ...whole.map((slab) => part(slab, slab.shape[1]!, [1, ...slab.shape.slice(1)])),
    ];
  }

  /** Bytes a snapshot of `rows` K/V rows holds, known before it is taken (the cache makes room first). */
  snapshotBytes(rows: number): number {
    return this.snapshotParts(rows).reduce((total, part) => total + part.bytes, 0);
  }

  /** Copies slot `slot` out; an allocation that fails gives back the copies already made before it throws. */
  snapshot(slot: number, rows: number, promptRows: number, promptComplete: boolean): LaneSnapshot<B> {
    const parts: Tensor<B>[] = [];
    let bytes = 0;
    try {
      for (const { slab, count, shape, bytes: partBytes } of this.snapshotParts(rows)) {
        // No step reads a snapshot: its allocation leaves the recorded steps as they are.
        const part = this.backend.allocate(slab.dtype, shape, true);
        parts.push(part);
        this.backend.copySlot(slab, slot, part, 0, count);
        bytes += partBytes;
      }
    } catch (error) {
      this.backend.release(parts);
      throw error;
    }
    return { promptRows, promptComplete, rows, parts, bytes };
  }

  restore(snapshot: LaneSnapshot<B>, slot: number): void {
    const { rowed, whole } = this.kinds();
    [...rowed, ...whole].forEach((slab, index) => {
      const part = snapshot.parts[index]!;
      this.backend.copySlot(part, 0, slab, slot, part.shape[1]!);
    });
  }
}
