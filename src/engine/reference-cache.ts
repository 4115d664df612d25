// The reference-prefix cache: a lane's state right after its prompt's invariant reference prefix, kept so that a
// later prompt starting with the same rows restores it and prefills only the rest (contract 4: the same audio as
// uncached). Entries are keyed by the exact rows — tokens [R] and codes [R, K] of rows [0, R), R = referenceRows —
// compared in full; the hash only finds the candidates. The snapshot is taken at row R − 1, not R: prefilling rows
// [0, R − 1) runs tower rows up to R − 2, which read codes up to row R − 1 (the lookahead row), all inside the key.
// Bounded by bytes, least recently used first out; entries remember the catalog voices they came from, so deleting
// or replacing a voice drops them. Each entry carries how to give its snapshot's storage back (device memory on
// cuda), and every way out of the cache (evicted, replaced, forgotten, cleared, closed) gives it back exactly once.
import type { PromptRows } from '../model/types.ts';

/** Cumulative counters and the current size, reported in engine stats and /metrics. */
export interface ReferenceCacheStats {
  readonly hits: number;
  readonly misses: number;
  readonly entries: number;
  readonly bytes: number;
  readonly capacityBytes: number;
  /** Prompt rows that hits did not have to prefill. */
  readonly rowsSaved: number;
  /** Snapshots not kept because one alone is larger than the whole budget. */
  readonly storesSkipped: number;
  /** Snapshots the allocator refused (the cap was reached): their requests went on uncached. */
  readonly storesFailed: number;
}

interface Entry {
  readonly hash: number;
  readonly tokens: Int32Array;
  readonly codes: Int32Array;
  readonly snapshot: unknown;
  readonly bytes: number;
  readonly voices: ReadonlySet<string>;
  readonly release: () => void;
}

/** Default byte budget of the cache. */
export const DEFAULT_REFERENCE_CACHE_BYTES = 256 * 1024 * 1024;
/** Shortest prefix worth caching (the snapshot row must be past row 0). */
const MIN_PREFIX_ROWS = 2;

/** The row a prompt's snapshot is taken at (and its prefill is cut at): R − 1, or 0 when there is no prefix. */
export function snapshotRow(rows: PromptRows): number {
  return rows.referenceRows >= MIN_PREFIX_ROWS && rows.referenceRows < rows.tokens.length ? rows.referenceRows - 1 : 0;
}

/** FNV-1a over the prefix's tokens and codes. */
function prefixHash(rows: PromptRows): number {
  const prefix = rows.referenceRows;
  const codebooks = rows.codes.length / rows.tokens.length;
  let hash = 0x811c9dc5;
  const take = (value: number) => {
    hash = Math.imul(hash ^ (value & 0xffff), 0x01000193);
    hash = Math.imul(hash ^ (value >>> 16), 0x01000193);
  };
  take(prefix);
  for (let row = 0; row < prefix; row++) take(rows.tokens[row]!);
  for (let index = 0; index < prefix * codebooks; index++) take(rows.codes[index]!);
  return hash >>> 0;
}

function samePrefix(entry: Entry, rows: PromptRows): boolean {
  const prefix = rows.referenceRows;
  const codebooks = rows.codes.length / rows.tokens.length;
  if (entry.tokens.length !== prefix || entry.codes.length !== prefix * codebooks) return false;
  for (let row = 0; row < prefix; row++) if (entry.tokens[row] !== rows.tokens[row]) return false;
  for (let index = 0; index < entry.codes.length; index++) if (entry.codes[index] !== rows.codes[index]) return false;
  return true;
}

/** A snapshot's size: its own `bytes` when it states one (device memory), else the bytes of its typed arrays. */
export function snapshotBytes(value: unknown, seen = new Set<unknown>()): number {
  if (value === null || typeof value !== 'object' || seen.has(value)) return 0;
  const stated = (value as { bytes?: unknown }).bytes;
  if (seen.size === 0 && typeof stated === 'number') return stated;
  seen.add(value);
  if (ArrayBuffer.isView(value)) return value.byteLength;
  let total = 0;
  for (const item of Object.values(value)) total += snapshotBytes(item, seen);
  return total;
}

export class ReferenceCache {
  /** Insertion order is recency order: the first entry is the least recently used. */
  private readonly entries = new Set<Entry>();
  private bytes = 0;
  private hits = 0;
  private misses = 0;
  private rowsSaved = 0;
  private storesSkipped = 0;
  private storesFailed = 0;
  private closed = false;

  constructor(readonly capacityBytes: number = DEFAULT_REFERENCE_CACHE_BYTES) {}

  /** The snapshot for a prompt with this exact prefix, or undefined; counts a hit or a miss. */
  lookup(rows: PromptRows): unknown {
    const hash = prefixHash(rows);
    for (const entry of this.entries) {
      if (entry.hash !== hash || !samePrefix(entry, rows)) continue;
      this.entries.delete(entry);
      this.entries.add(entry);
      this.hits += 1;
      this.rowsSaved += snapshotRow(rows);
      return entry.snapshot;
    }
    this.misses += 1;
    return undefined;
  }

  /**
   * Evicts least recently used entries until a snapshot of `bytes` fits beside the rest, before it is allocated (the
   * cache's bytes are set aside under the device cap, so the new one must not be allocated on top of a full cache).
   * False, counted as skipped, when it could never fit or the cache is closed.
   */
  makeRoom(bytes: number): boolean {
    if (this.closed || bytes > this.capacityBytes) {
      this.storesSkipped += 1;
      return false;
    }
    for (const entry of [...this.entries]) {
      if (this.bytes + bytes <= this.capacityBytes) break;
      this.drop(entry);
    }
    return true;
  }

  /** Counts a snapshot the allocator refused. */
  storeFailed(): void {
    this.storesFailed += 1;
  }

  /**
   * Keeps a snapshot taken at snapshotRow(rows); `voices` are the catalog voices its references came from and
   * `release` gives its storage back. One that is not kept is released at once.
   */
  store(rows: PromptRows, snapshot: unknown, voices: readonly string[], release: () => void = () => {}): void {
    const bytes = snapshotBytes(snapshot);
    if (this.closed || bytes > this.capacityBytes) {
      this.storesSkipped += 1;
      release();
      return;
    }
    const codebooks = rows.codes.length / rows.tokens.length;
    const hash = prefixHash(rows);
    for (const entry of [...this.entries]) if (entry.hash === hash && samePrefix(entry, rows)) this.drop(entry);
    const added: Entry = {
      hash,
      tokens: rows.tokens.slice(0, rows.referenceRows),
      codes: rows.codes.slice(0, rows.referenceRows * codebooks),
      snapshot,
      bytes,
      voices: new Set(voices),
      release,
    };
    this.entries.add(added);
    this.bytes += bytes;
    for (const entry of [...this.entries]) {
      if (this.bytes <= this.capacityBytes || entry === added) break;
      this.drop(entry);
    }
  }

  /** Drops the entry holding this snapshot, if one still does (its request failed before the state was confirmed). */
  forgetSnapshot(snapshot: unknown): void {
    for (const entry of this.entries) {
      if (entry.snapshot !== snapshot) continue;
      this.drop(entry);
      return;
    }
  }

  /** Drops every entry built from this catalog voice (it was deleted or replaced). */
  forgetVoice(name: string): void {
    for (const entry of [...this.entries]) if (entry.voices.has(name)) this.drop(entry);
  }

  clear(): void {
    for (const entry of [...this.entries]) this.drop(entry);
  }

  /** Gives every snapshot back and keeps no more (shutdown, before the backend closes). */
  close(): void {
    this.closed = true;
    this.clear();
  }

  stats(): ReferenceCacheStats {
    return {
      hits: this.hits,
      misses: this.misses,
      entries: this.entries.size,
      bytes: this.bytes,
      capacityBytes: this.capacityBytes,
      rowsSaved: this.rowsSaved,
      storesSkipped: this.storesSkipped,
      storesFailed: this.storesFailed,
    };
  }

  private drop(entry: Entry): void {
    if (!this.entries.delete(entry)) return;
    this.bytes -= entry.bytes;
    entry.release();
  }
}
