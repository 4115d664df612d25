// Prometheus metrics for one app (its own registry, so tests may build many apps): requests by route and status,
// time to first audio, frames generated, queue depth and lanes busy (read from the engine at scrape time).
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { EngineStats } from '../engine/protocol.ts';

export interface ServerMetrics {
  readonly registry: Registry;
  readonly requests: Counter<'route' | 'status'>;
  readonly timeToFirstAudio: Histogram<'route'>;
  readonly framesGenerated: Counter;
}

export function createMetrics(readStats: () => EngineStats | undefined, withProcessMetrics: boolean): ServerMetrics {
  const registry = new Registry();
  if (withProcessMetrics) collectDefaultMetrics({ register: registry, prefix: 'drama3_' });
  const requests = new Counter({
    name: 'drama3_requests_total',
    help: 'Speech requests by route and final HTTP status',
    labelNames: ['route', 'status'],
    registers: [registry],
  });
  const timeToFirstAudio = new Histogram({
    name: 'drama3_time_to_first_audio_seconds',
    help: 'Seconds from request arrival to its first audio bytes',
    labelNames: ['route'],
    buckets: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
    registers: [registry],
  });
  const framesGenerated = new Counter({
    name: 'drama3_frames_total',
    help: 'Audio frames generated (rate = frames per second)',
    registers: [registry],
  });
  new Gauge({
    name: 'drama3_queue_depth',
    help: 'Admitted requests waiting for a lane',
    registers: [registry],
    collect() {
      this.set(readStats()?.waiting ?? 0);
    },
  });
  new Gauge({
    name: 'drama3_lanes_busy',
    help: 'Lanes holding a request',
    registers: [registry],
    collect() {
      this.set(readStats()?.lanesBusy ?? 0);
    },
  });
  return { registry, requests, timeToFirstAudio, framesGenerated };
}
