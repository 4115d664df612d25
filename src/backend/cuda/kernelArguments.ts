// Kernel parameters for cuLaunchKernel: one 8-byte slot per argument holding its value, and a table of the slots'
// addresses (the `void** kernelParams` the driver reads at launch, copying the values, so the storage need only
// outlive the call). Slots are allocated as a fresh ArrayBuffer so that their addresses cannot move. The byte size of
// each argument is kept, so the kernel contract can check a launcher's layout against the kernel's parameters.
import { addressOf } from './library.ts';

const SLOT_BYTES = 8;
/** The property of an address table that holds the slots its addresses point into. */
export const SLOTS = Symbol('kernel argument slots');

export class KernelArguments {
  private readonly view: DataView;
  private readonly table: BigUint64Array;
  private count = 0;
  private readonly widths: number[] = [];

  constructor(capacity = 16) {
    const storage = new Uint8Array(new ArrayBuffer(capacity * SLOT_BYTES));
    this.view = new DataView(storage.buffer);
    this.table = new BigUint64Array(new ArrayBuffer(capacity * 8));
    const base = addressOf(storage);
    for (let index = 0; index < capacity; index++) this.table[index] = base + BigInt(index * SLOT_BYTES);
    // The table's addresses point into the slots: whoever keeps the table (a launch recorded to be read later) keeps
    // the slots alive with it, so they cannot be collected and their memory reused while it is held.
    Object.defineProperty(this.table, SLOTS, { value: storage });
  }

  /** The address table to hand to the driver. */
  get parameters(): BigUint64Array {
    return this.table;
  }

  /** The byte size of each argument so far, in order (what the kernel's parameters must match). */
  get sizes(): readonly number[] {
    return this.widths;
  }

  pointer(value: bigint): this {
    this.view.setBigUint64(this.slot(8), value, true);
    return this;
  }

  int32(value: number): this {
    this.view.setInt32(this.slot(4), value, true);
    return this;
  }

  uint32(value: number): this {
    this.view.setUint32(this.slot(4), value, true);
    return this;
  }

  int64(value: number | bigint): this {
    this.view.setBigInt64(this.slot(8), BigInt(value), true);
    return this;
  }

  float32(value: number): this {
    this.view.setFloat32(this.slot(4), value, true);
    return this;
  }

  float64(value: number): this {
    this.view.setFloat64(this.slot(8), value, true);
    return this;
  }

  private slot(bytes: number): number {
    if (this.count >= this.table.length) throw new RangeError(`more than ${this.table.length} kernel arguments`);
    this.widths.push(bytes);
    return this.count++ * SLOT_BYTES;
  }
}
