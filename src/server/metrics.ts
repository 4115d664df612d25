// Prometheus metrics for one app (its own registry, so tests may build many apps): every response by route, status
// and code; time to first audio; frames generated; and what admission holds, read from the engine at scrape time:
// requests in flight, queue depth, lanes busy (frames still waiting for decode included) and the decode backlog, so
// that a 503 can be explained from /metrics alone; the lane memory left free and the device's allocator ledger; and
// the engine's frame rounds by kind (wall seconds, rounds, rows), so that a slow aggregate can be split into prefill
// and stepping from /metrics too.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { EngineLoad } from '../engine/engine.ts';
import type { RoundTime } from '../engine/protocol.ts';

const ROUND_KINDS = ['prefill', 'step'] as const;
type RoundKind = (typeof ROUND_KINDS)[number];

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
  // The engine's round times are totals since it (re)started: each collection adds what they grew by, so the
  // counters keep rising across an engine restart (a total that went down starts again from zero).
  const roundTotal = (name: string, help: string, read: (time: RoundTime) => Record<RoundKind, number>) => {
    const last: Record<RoundKind, number> = { prefill: 0, step: 0 };
    return new Counter({
      name,
      help,
      labelNames: ['kind'],
      registers,
      collect() {
        const time = readLoad()?.roundTime;
        if (time === undefined) return;
        const now = read(time);
        for (const kind of ROUND_KINDS) {
          const grown = now[kind] >= last[kind] ? now[kind] - last[kind] : now[kind];
          if (grown > 0) this.inc({ kind }, grown);
          last[kind] = now[kind];
        }
      },
    });
  };
  roundTotal(
    'drama3_engine_round_seconds_total',
    'Wall seconds of frame rounds: prefill (rounds that prefilled prompt rows, stepping the generating lanes too) and step (rounds that only stepped)',
    (t) => ({ prefill: t.prefillRoundMs / 1000, step: t.stepRoundMs / 1000 }),
  );
  roundTotal('drama3_engine_rounds_total', 'Frame rounds, by the same kinds', (t) => ({
    prefill: t.prefillRounds,
    step: t.stepRounds,
  }));
  roundTotal(
    'drama3_engine_rows_total',
    'Prompt rows prefilled (prefill) and lane steps (step: frames drawn and ends)',
    (t) => ({
      prefill: t.prefillRows,
      step: t.laneSteps,
    }),
  );
  return { registry, requests, timeToFirstAudio, framesGenerated };
}
