// How the scheduler opens and prefills lanes around the reference cache. A prefill piece is at most a chunk and ends
// at the snapshot row when it passes it: from row 0 the cuts fall at multiples of the chunk, and after the snapshot
// row at multiples of the chunk past it, with the cache on or off, hit or miss, so that a cached request makes the
// same prefill cuts as an uncached one from that row on. Counting past the snapshot row rather than from row 0 keeps
// a hit's few text rows in one piece, one prefill round (no cut changes a bit: contract 2). A snapshot is allocated
// only once the cache has made room for it, and one the allocator refuses (the cap was reached) is counted and
// skipped: its request goes on uncached.
import { DramaError } from '../errors.ts';
import type { Lane, PromptRows, SamplingSettings, SpeechModel } from '../model/types.ts';
import { type ReferenceCache, snapshotRow } from './reference-cache.ts';

/** A model that can copy a prefilled lane's state, start new lanes from the copy and give the copy's storage back. */
export interface SnapshotModel {
  snapshot(lane: Lane): unknown;
  /** Bytes snapshot(lane) would hold, known before it is taken. */
  snapshotBytes(lane: Lane): number;
  restore(snapshot: unknown, sampling: SamplingSettings): Lane;
  discard(snapshot: unknown): void;
}

/** The model's snapshot support, when it has all of it. */
function snapshotModel(model: SpeechModel): SnapshotModel | undefined {
  const candidate = model as Partial<SnapshotModel>;
  const methods = [candidate.snapshot, candidate.snapshotBytes, candidate.restore, candidate.discard];
  return methods.every((method) => typeof method === 'function') ? (model as unknown as SnapshotModel) : undefined;
}

/** The allocator's refusals: the cap (ALLOCATION_LIMIT_EXCEEDED) or the device itself out of memory. */
const ALLOCATION_REFUSALS = new Set(['ALLOCATION_LIMIT_EXCEEDED', 'CUDA_ERROR_OUT_OF_MEMORY']);

export class ReferencePrefill {
  private readonly snapshots: SnapshotModel | undefined;

  constructor(
    private readonly model: SpeechModel,
    readonly cache: ReferenceCache | undefined,
  ) {
    this.snapshots = cache === undefined ? undefined : snapshotModel(model);
  }

  /** A lane for this prompt: restored at the snapshot row on a hit, else new at row 0. */
  open(rows: PromptRows, sampling: SamplingSettings): { lane: Lane; prefilled: number } {
    const row = snapshotRow(rows);
    if (this.snapshots === undefined || row === 0) return { lane: this.model.newLane(sampling), prefilled: 0 };
    const snapshot = this.cache!.lookup(rows);
    if (snapshot === undefined) return { lane: this.model.newLane(sampling), prefilled: 0 };
    return { lane: this.snapshots.restore(snapshot, sampling), prefilled: row };
  }

  /** Where the prefill piece that starts at `prefilled` ends. */
  nextCut(rows: PromptRows, prefilled: number, chunk: number): number {
    const row = snapshotRow(rows);
    const origin = prefilled >= row ? row : 0;
    const next = Math.min(rows.tokens.length, origin + (Math.floor((prefilled - origin) / chunk) + 1) * chunk);
    return row > prefilled && row < next ? row : next;
  }

  /**
   * After a piece ended at `to`: a lane standing at the snapshot row is copied into the cache. Returns the snapshot
   * kept, so that the caller can take it out again if its request fails before its state is confirmed.
   */
  prefilledTo(lane: Lane, rows: PromptRows, to: number, voices: readonly string[]): unknown {
    const snapshots = this.snapshots;
    if (snapshots === undefined || to === 0 || to !== snapshotRow(rows)) return undefined;
    const cache = this.cache!;
    if (!cache.makeRoom(snapshots.snapshotBytes(lane))) return undefined;
    let snapshot: unknown;
    try {
      snapshot = snapshots.snapshot(lane);
    } catch (error) {
      if (!(error instanceof DramaError && ALLOCATION_REFUSALS.has(error.code))) throw error;
      cache.storeFailed();
      return undefined;
    }
    cache.store(rows, snapshot, voices, () => snapshots.discard(snapshot));
    return snapshot;
  }
}
