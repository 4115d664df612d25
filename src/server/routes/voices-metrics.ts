// Reference cache and catalog metrics in /metrics, and one log line per cache hit or miss. The cache lives in the
// engine's thread; its counters arrive with the engine's stats after every frame round.
import type { FastifyBaseLogger } from 'fastify';
import { Counter, Gauge } from 'prom-client';
import type { Engine } from '../../engine/engine.ts';
import type { ReferenceCacheStats } from '../../engine/reference-cache.ts';
import type { VoiceCatalog } from '../../voices/catalog.ts';
import type { ServerContext } from '../context.ts';

export function registerVoiceMetrics(
  context: ServerContext,
  catalog: VoiceCatalog | undefined,
  engine: Promise<Engine>,
  log: FastifyBaseLogger,
): void {
  const registers = [context.metrics.registry];
  let latest: ReferenceCacheStats | undefined;
  void engine
    .then((ready) => {
      ready.on('stats', (stats) => {
        const next = stats.referenceCache;
        if (next === undefined) return;
        const before = latest ?? { hits: 0, misses: 0, rowsSaved: 0 };
        if (next.hits > before.hits)
          log.info({ referenceCache: 'hit', rowsSaved: next.rowsSaved - before.rowsSaved }, 'reference cache hit');
        if (next.misses > before.misses) log.info({ referenceCache: 'miss' }, 'reference cache miss');
        latest = next;
      });
    })
    .catch(() => {});
  const counter = (name: string, help: string, read: (stats: ReferenceCacheStats) => number) =>
    new Counter({
      name,
      help,
      registers,
      collect() {
        this.reset();
        if (latest !== undefined) this.inc(read(latest));
      },
    });
  const gauge = (name: string, help: string, read: () => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(read());
      },
    });
  counter('drama3_reference_cache_hits_total', 'Prompts whose reference prefix was restored', (s) => s.hits);
  counter('drama3_reference_cache_misses_total', 'Prompts with a reference prefix not in the cache', (s) => s.misses);
  counter('drama3_reference_cache_rows_saved_total', 'Prompt rows not prefilled thanks to hits', (s) => s.rowsSaved);
  counter(
    'drama3_reference_cache_stores_skipped_total',
    'Reference snapshots not kept: one alone is larger than the cache budget',
    (s) => s.storesSkipped,
  );
  counter(
    'drama3_reference_cache_stores_failed_total',
    'Reference snapshots the allocator refused (the cap was reached); their requests went on uncached',
    (s) => s.storesFailed,
  );
  gauge('drama3_reference_cache_entries', 'Reference prefixes held', () => latest?.entries ?? 0);
  gauge('drama3_reference_cache_bytes', 'Bytes held by the reference cache', () => latest?.bytes ?? 0);
  gauge(
    'drama3_reference_cache_capacity_bytes',
    'Byte budget of the reference cache',
    () => latest?.capacityBytes ?? 0,
  );
  gauge('drama3_voices', 'Voices in the catalog', () => catalog?.list().length ?? 0);
}
