// Prometheus metrics for one app (its own registry, so tests may build many apps): every response by route, status
// and code; time to first audio; frames generated; and what admission holds, read from the engine at scrape time:
// requests in flight, queue depth, lanes busy (frames still waiting for decode included) and the decode backlog, so
// that a 503 can be explained from /metrics alone; and the lane memory left free and the device's allocator ledger.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { EngineLoad } from '../engine/engine.ts';

export interface ServerMetrics {
  readonly registry: Registry;
  readonly requests: Counter<'route' | 'status' | 'code'>;
  readonly timeToFirstAudio: Histogram<'route'>;
  readonly framesGenerated: Counter;
}

/** Route patterns → the short names the counter uses; anything else (an unknown path) is `unmatched`. */
const ROUTE_NAMES: Record<string, string> = {
  '/v1/audio/speech': 'speech',
  '/v1/tts': 'tts',
  '/v1/audio/voices': 'voices',
  '/v1/audio/voices/:id': 'voice',
  '/v1/models': 'models',
  '/health': 'health',
  '/metrics': 'metrics',
  '/openapi.json': 'openapi',
  '/': 'page',
};

export function routeName(pattern: string | undefined): string {
  return (pattern !== undefined && ROUTE_NAMES[pattern]) || 'unmatched';
}

export function createMetrics(readLoad: () => EngineLoad | undefined, withProcessMetrics: boolean): ServerMetrics {
  const registry = new Registry();
  const registers = [registry];
  if (withProcessMetrics) collectDefaultMetrics({ register: registry, prefix: 'drama3_' });
  const requests = new Counter({
    name: 'drama3_requests_total',
    help: 'Responses by route, final HTTP status and code (ok, an error code, CLIENT_CLOSED, ...)',
    labelNames: ['route', 'status', 'code'],
    registers,
  });
  const timeToFirstAudio = new Histogram({
    name: 'drama3_time_to_first_audio_seconds',
    help: 'Seconds from request arrival to its first audio bytes',
    labelNames: ['route'],
    buckets: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
    registers,
  });
  const framesGenerated = new Counter({
    name: 'drama3_frames_total',
    help: 'Audio frames generated (rate = frames per second)',
    registers,
  });
  const gauge = (name: string, help: string, read: (load: EngineLoad) => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        const load = readLoad();
        this.set(load === undefined ? 0 : read(load));
      },
    });
  gauge('drama3_requests_in_flight', 'Requests holding admission (lanes + queue: beyond that, 503)', (l) => l.inFlight);
  gauge('drama3_queue_depth', 'Requests waiting for a lane (being prepared or queued)', (l) => l.queued);
  gauge('drama3_lanes_busy', 'Requests on a lane or with frames still waiting for decode', (l) => l.lanesBusy);
  gauge('drama3_decode_backlog', 'Requests done generating whose frames still wait for decode', (l) => l.decodeBacklog);
  gauge(
    'drama3_lane_memory_free',
    'Lane memory the running requests leave free (device bytes on cuda, rows on the cpu)',
    (l) => l.laneMemoryFree,
  );
  gauge('drama3_device_memory_used_bytes', 'Device bytes the allocator holds (0 off the device)', (l) => {
    return l.deviceMemory?.usedBytes ?? 0;
  });
  gauge(
    'drama3_device_memory_limit_bytes',
    'The allocation cap (0 off the device)',
    (l) => l.deviceMemory?.limitBytes ?? 0,
  );
  return { registry, requests, timeToFirstAudio, framesGenerated };
}
