// Small host ↔ device copies queued on the stream without waiting for it: a frame step's call tables and its read
// back. Each copy goes through a region of one pinned host ring, and an event recorded after the copy says when the
// region may be written again, so the tables of step t + 1 can be written while step t still runs and the frames of
// step t read back after step t + 1 is queued (the scheduler's look-ahead). A copy from pinned memory is one transfer
// the stream orders; a pageable one is staged by the driver, which delayed the step's read back in serving.
import { DramaError } from '../../errors.ts';
import type { CudaContext } from './context.ts';
import type { DevicePointer, Handle } from './driver.ts';
import type { Allocation } from './memory.ts';

/** The ring's size: a 64-lane step's tables and read back take about 7 KB. */
export const STAGING_RING_BYTES = 256 * 1024;
/** Larger copies do not go through the ring (callers copy them directly and wait). */
export const LARGEST_STAGED_BYTES = STAGING_RING_BYTES / 4;
const REGION_ALIGNMENT = 256;

interface Region {
  readonly start: number;
  readonly end: number;
  readonly event: Handle;
  /** A read whose bytes have not been taken yet: its region may not be reused. */
  held: boolean;
}

/** A read queued on the stream: `wait` waits for its copy and returns the bytes (once). */
export interface StagedRead {
  wait(): Uint8Array;
}

export class StagingRing {
  private ring: { readonly allocation: Allocation; readonly bytes: Uint8Array } | undefined;
  /** Regions whose copies may still be queued, oldest first. */
  private readonly regions: Region[] = [];
  private readonly spareEvents: Handle[] = [];
  private position = 0;

  constructor(private readonly cuda: CudaContext) {}

  /** Queues a copy of `values` to `destination` behind the stream's work so far; returns at once. */
  write(destination: DevicePointer, values: Uint8Array): void {
    const { driver, stream } = this.cuda;
    const region = this.take(values.byteLength, false);
    const ring = this.ring!;
    ring.bytes.set(values, region.start);
    driver.copyHostToDevice(destination, ring.allocation.pointer + BigInt(region.start), values.byteLength, stream);
    driver.recordEvent(region.event, stream);
  }

  /** Queues a copy of `byteLength` bytes at `source` behind the stream's work so far; returns at once. */
  read(source: DevicePointer, byteLength: number): StagedRead {
    const { driver, stream } = this.cuda;
    const region = this.take(byteLength, true);
    const ring = this.ring!;
    driver.copyDeviceToHost(ring.allocation.pointer + BigInt(region.start), source, byteLength, stream);
    driver.recordEvent(region.event, stream);
    return {
      wait: () => {
        if (!region.held) {
          throw new DramaError('STAGED_READ_TAKEN', 'a staged read was waited for twice', { kind: 'internal' });
        }
        driver.synchronizeEvent(region.event);
        region.held = false;
        return ring.bytes.slice(region.start, region.start + byteLength);
      },
    };
  }

  /** Waits for every queued copy and gives the ring back. */
  release(): void {
    const { driver } = this.cuda;
    for (const region of this.regions.splice(0)) {
      driver.synchronizeEvent(region.event);
      driver.destroyEvent(region.event);
    }
    for (const event of this.spareEvents.splice(0)) driver.destroyEvent(event);
    this.ring?.allocation.free();
    this.ring = undefined;
    this.position = 0;
  }

  /** A region of `bytes` after the last one (from the ring's start when the end is too near), freed of older copies. */
  private take(bytes: number, held: boolean): Region {
    const size = Math.ceil(Math.max(bytes, 1) / REGION_ALIGNMENT) * REGION_ALIGNMENT;
    if (size > LARGEST_STAGED_BYTES) {
      throw new DramaError('STAGED_COPY_TOO_LARGE', `a staged copy of ${bytes} bytes exceeds ${LARGEST_STAGED_BYTES}`, {
        kind: 'internal',
      });
    }
    this.ring ??= this.allocate();
    const start = this.position + size > STAGING_RING_BYTES ? 0 : this.position;
    const end = start + size;
    while (this.regions.some((region) => region.start < end && start < region.end)) this.retireOldest();
    this.position = end;
    const event = this.spareEvents.pop() ?? this.cuda.driver.createEvent(false);
    const region = { start, end, event, held };
    this.regions.push(region);
    return region;
  }

  /** Waits for the oldest region's copy; a read not yet taken cannot be overwritten. */
  private retireOldest(): void {
    const oldest = this.regions[0]!;
    if (oldest.held) {
      throw new DramaError('STAGING_RING_FULL', 'the staging ring is full of reads not yet waited for', {
        kind: 'internal',
      });
    }
    this.cuda.driver.synchronizeEvent(oldest.event);
    this.regions.shift();
    this.spareEvents.push(oldest.event);
  }

  private allocate(): { allocation: Allocation; bytes: Uint8Array } {
    const allocation = this.cuda.memory.allocate('pinned-host', STAGING_RING_BYTES, 'staging ring');
    return { allocation, bytes: this.cuda.pinnedView(allocation.pointer, STAGING_RING_BYTES) };
  }
}
