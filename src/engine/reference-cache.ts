// The reference-prefix cache: a lane's state right after its prompt's invariant reference prefix, kept so that a
// later prompt starting with the same rows restores it and prefills only the rest (contract 4: the same audio as
// uncached). Entries are keyed by the exact rows — tokens [R] and codes [R, K] of rows [0, R), R = referenceRows —
// compared in full; the hash only finds the candidates. The snapshot is taken at row R − 1, not R: prefilling rows
// [0, R − 1) runs tower rows up to R − 2, which read codes up to row R − 1 (the lookahead row), all inside the key.
// Bounded by bytes, least recently used first out; entries remember the catalog voices they came from, so deleting
// or replacing a voice drops them.
import type { Lane, PromptRows, SamplingSettings, SpeechModel } from '../model/types.ts';

/** A model that can copy a prefilled lane's state and start new lanes from the copy. */
export interface SnapshotModel {
  snapshot(lane: Lane): unknown;
  restore(snapshot: unknown, sampling: SamplingSettings): Lane;
}

/** The model's snapshot support, when it has one. */
function snapshotModel(model: SpeechModel): SnapshotModel | undefined {
  const candidate = model as Partial<SnapshotModel>;
  return typeof candidate.snapshot === 'function' && typeof candidate.restore === 'function'
    ? (model as unknown as SnapshotModel)
    : undefined;
}

/** Cumulative counters and the current size, reported in engine stats and /metrics. */
export interface ReferenceCacheStats {
  readonly hits: number;
  readonly misses: number;
  readonly entries: number;
  readonly bytes: number;
  readonly capacityBytes: number;
  /** Prompt rows that hits did not have to prefill. */
  readonly rowsSaved: number;
}

interface Entry {
  readonly hash: number;
  readonly tokens: Int32Array;
  readonly codes: Int32Array;
  readonly snapshot: unknown;
  readonly bytes: number;
  readonly voices: ReadonlySet<string>;
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

  /** Keeps a snapshot taken at snapshotRow(rows); `voices` are the catalog voices its references came from. */
  store(rows: PromptRows, snapshot: unknown, voices: readonly string[]): void {
    const bytes = snapshotBytes(snapshot);
    if (bytes > this.capacityBytes) return;
    const codebooks = rows.codes.length / rows.tokens.length;
    const hash = prefixHash(rows);
    for (const entry of this.entries) if (entry.hash === hash && samePrefix(entry, rows)) this.drop(entry);
    this.entries.add({
      hash,
      tokens: rows.tokens.slice(0, rows.referenceRows),
      codes: rows.codes.slice(0, rows.referenceRows * codebooks),
      snapshot,
      bytes,
      voices: new Set(voices),
    });
    this.bytes += bytes;
    for (const entry of this.entries) {
      if (this.bytes <= this.capacityBytes) break;
      this.drop(entry);
    }
  }

  /** Drops every entry built from this catalog voice (it was deleted or replaced). */
  forgetVoice(name: string): void {
    for (const entry of [...this.entries]) if (entry.voices.has(name)) this.drop(entry);
  }

  clear(): void {
    for (const entry of [...this.entries]) this.drop(entry);
  }

  stats(): ReferenceCacheStats {
    return {
      hits: this.hits,
      misses: this.misses,
      entries: this.entries.size,
      bytes: this.bytes,
      capacityBytes: this.capacityBytes,
      rowsSaved: this.rowsSaved,
    };
  }

  private drop(entry: Entry): void {
    if (this.entries.delete(entry)) this.bytes -= entry.bytes;
  }
}

/**
 * How the scheduler opens and prefills lanes around the cache. Prefill pieces end at absolute multiples of the chunk
 * size and at the snapshot row, with the cache on or off, hit or miss, so that a cached request makes the same
 * prefill cuts as an uncached one.
 */
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
    const next = Math.min(rows.tokens.length, (Math.floor(prefilled / chunk) + 1) * chunk);
    return row > prefilled && row < next ? row : next;
  }

  /** After a piece ended at `to`: a lane standing at the snapshot row is copied into the cache. */
  prefilledTo(lane: Lane, rows: PromptRows, to: number, voices: readonly string[]): void {
    if (this.snapshots === undefined || to === 0 || to !== snapshotRow(rows)) return;
    this.cache!.store(rows, this.snapshots.snapshot(lane), voices);
  }
}
