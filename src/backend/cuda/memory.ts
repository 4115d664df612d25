// Device and pinned-host allocations under an allocation limit. A request reserves its bytes against the limit
// before the driver is asked, and a failed driver call refunds them: allocations in flight together can never sum
// past the limit, and a refused or failed one leaves usage and the peak as they were. The peak is of committed bytes
// (what the driver actually handed out), so a refusal cannot raise it either.
import { DramaError } from '../../errors.ts';

export type MemoryKind = 'device' | 'pinned-host';

/** What the allocator needs from the driver (the real one, or a stand-in in tests). */
export interface AllocationBackend {
  allocate(kind: MemoryKind, bytes: number): bigint | Promise<bigint>;
  release(kind: MemoryKind, pointer: bigint): void;
}

export interface MemoryUsage {
  /** Bytes handed out and not yet freed. */
  readonly usedBytes: number;
  /** Bytes reserved by requests still waiting on the driver. */
  readonly pendingBytes: number;
  /** The most bytes ever held at once. */
  readonly peakBytes: number;
  readonly limitBytes: number;
}

export interface Allocation {
  readonly kind: MemoryKind;
  readonly pointer: bigint;
  readonly bytes: number;
  readonly label: string;
  free(): void;
}

class Ledger {
  used = 0;
  pending = 0;
  peak = 0;
  constructor(readonly limit: number) {}
}

export class MemoryPool {
  private readonly ledgers: Record<MemoryKind, Ledger>;

  constructor(
    private readonly backend: AllocationBackend,
    limits: { deviceBytes: number; pinnedHostBytes: number },
  ) {
    this.ledgers = { device: new Ledger(limits.deviceBytes), 'pinned-host': new Ledger(limits.pinnedHostBytes) };
  }

  usage(kind: MemoryKind): MemoryUsage {
    const ledger = this.ledgers[kind];
    return { usedBytes: ledger.used, pendingBytes: ledger.pending, peakBytes: ledger.peak, limitBytes: ledger.limit };
  }

  /** Allocates with a synchronous backend (the CUDA driver). */
  allocate(kind: MemoryKind, bytes: number, label: string): Allocation {
    this.reserve(kind, bytes, label);
    let pointer: bigint | Promise<bigint>;
    try {
      pointer = this.backend.allocate(kind, bytes);
    } catch (error) {
      this.refund(kind, bytes);
      throw error;
    }
    if (typeof pointer !== 'bigint') {
      this.refund(kind, bytes);
      // Give back whatever the late answer hands out, so the misuse leaks nothing.
      pointer.then(
        (late) => this.backend.release(kind, late),
        () => {},
      );
      throw new DramaError('ALLOCATION_BACKEND_ASYNC', 'this backend allocates asynchronously: use allocateAsync', {
        kind: 'internal',
      });
    }
    return this.commit(kind, bytes, label, pointer);
  }

  /** Allocates when the backend may answer later; the reservation is taken before the first await. */
  async allocateAsync(kind: MemoryKind, bytes: number, label: string): Promise<Allocation> {
    this.reserve(kind, bytes, label);
    let pointer: bigint;
    try {
      pointer = await this.backend.allocate(kind, bytes);
    } catch (error) {
      this.refund(kind, bytes);
      throw error;
    }
    return this.commit(kind, bytes, label, pointer);
  }

  private reserve(kind: MemoryKind, bytes: number, label: string): void {
    if (!Number.isSafeInteger(bytes) || bytes <= 0) {
      throw new DramaError('ALLOCATION_SIZE_INVALID', `cannot allocate ${bytes} bytes for ${label}`, {
        kind: 'internal',
      });
    }
    const ledger = this.ledgers[kind];
    const wouldHold = ledger.used + ledger.pending + bytes;
    if (wouldHold > ledger.limit) {
      throw new DramaError(
        'ALLOCATION_LIMIT_EXCEEDED',
        `${kind} allocation of ${bytes} bytes for ${label} refused: ${ledger.used} in use and ${ledger.pending} ` +
          `pending would reach ${wouldHold}, over the limit of ${ledger.limit}`,
        { kind: 'device' },
      );
    }
    ledger.pending += bytes;
  }

  private refund(kind: MemoryKind, bytes: number): void {
    this.ledgers[kind].pending -= bytes;
  }

  private commit(kind: MemoryKind, bytes: number, label: string, pointer: bigint): Allocation {
    const ledger = this.ledgers[kind];
    ledger.pending -= bytes;
    ledger.used += bytes;
    ledger.peak = Math.max(ledger.peak, ledger.used);
    let freed = false;
    const backend = this.backend;
    return {
      kind,
      pointer,
      bytes,
      label,
      free(): void {
        if (freed) return;
        freed = true;
        backend.release(kind, pointer);
        ledger.used -= bytes;
      },
    };
  }
}
