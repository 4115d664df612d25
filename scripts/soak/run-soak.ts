// The soak: a server on the null engine in its worker thread (with its decode thread, the AAC worker and the voice
// encoder thread, as in production), many loopback clients sending random requests and hanging up at random points,
// for a bounded time and request count. It then waits for the engine to drain and reports requests by outcome, lanes
// busy and requests in flight (which must be 0), and RSS and open file descriptors at the start, after warm-up and
// at the end, whose growth after warm-up must stay within the stated bound.

import { mkdtemp, readdir, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openVoices } from '../../src/cli/voices.ts';
import { send } from '../../test/fuzz/support/http-client.ts';
import { multipartRequest } from '../../test/fuzz/support/requests.ts';
import { startTestServer } from '../../test/server/support.ts';
import { toneWav } from '../../test/voices/wav-fixture.ts';
import { drawRequest, runRequest } from './clients.ts';
import { TraceBook } from './trace-book.ts';

export interface SoakOptions {
  readonly seconds: number;
  readonly clients: number;
  readonly maxRequests: number;
  readonly seed: number;
}

/** Growth allowed after warm-up: beyond it the soak fails. */
export const RSS_GROWTH_BOUND_MIB = 64;
export const FD_GROWTH_BOUND = 8;

export interface Sample {
  readonly rssMiB: number;
  readonly fds: number;
}

export interface SoakReport {
  readonly options: SoakOptions;
  readonly outcomes: ReadonlyMap<string, number>;
  readonly requests: number;
  readonly lanesBusy: number;
  readonly inFlight: number;
  readonly samples: { readonly start: Sample; readonly warm: Sample; readonly end: Sample };
  readonly failures: readonly string[];
  /** The server's own request counter at the end, one line per label set: how it saw the same traffic. */
  readonly serverCounts: readonly [string, number][];
  /** The longest any request took to end, its way (on a loaded machine, far more than on a quiet one). */
  readonly slowestRequestMs: number;
  /** The longest the soak's event loop (the server's too) could not run: how starved the process was. */
  readonly longestLoopDelayMs: number;
}

/** `drama3_requests_total{route="speech",status="503",code="…"} 4` lines of a /metrics scrape. */
function requestCounts(metrics: string): [string, number][] {
  return [...metrics.matchAll(/^drama3_requests_total\{(.*)\} (\d+)$/gm)].map((match): [string, number] => [
    match[1]!.replaceAll('"', ''),
    Number(match[2]),
  ]);
}

/** A small seeded generator (mulberry32), so that a soak can be replayed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function sample(): Promise<Sample> {
  (globalThis as { gc?: () => void }).gc?.();
  await new Promise((resolve) => setTimeout(resolve, 50));
  return { rssMiB: process.memoryUsage().rss / 2 ** 20, fds: (await readdir('/proc/self/fd')).length };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const catalogDir = await mkdtemp(join(tmpdir(), 'drama3-soak-voices-'));
  const book = new TraceBook();
  const server = await startTestServer({
    thread: 'worker',
    settings: { lanes: 4 },
    queueLimit: 8,
    model: { stepMilliseconds: 1, framesPerRow: 1 },
    app: {
      ...(await openVoices(catalogDir, { kind: 'null' })),
      trace: (id, event) => book.record(id, `server: ${event}`),
    },
  });
  const random = seeded(options.seed);
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.clients });
  const outcomes = new Map<string, number>();
  const failures: string[] = [];
  let requests = 0;
  let slowestMs = 0;
  try {
    const stored = await send(
      server.url,
      multipartRequest([
        { name: 'name', value: 'soak' },
        { name: 'text', value: 'The soak voice.' },
        { name: 'audio', value: toneWav(1), filename: 'soak.wav' },
      ]),
    );
    const voice = stored.status === 201 ? 'soak' : undefined;
    const start = await sample();
    const began = Date.now();
    book.start();
    const warmUpMs = Math.min(10_000, (options.seconds * 1000) / 6);
    const stopAt = began + options.seconds * 1000;
    let warm: Sample | undefined;
    const warmed = sleep(warmUpMs).then(async () => {
      warm = await sample();
    });
    const client = async () => {
      while (Date.now() < stopAt && requests < options.maxRequests) {
        requests += 1;
        const id = `soak-${requests}`;
        const sent = performance.now();
        const outcome = await runRequest(server.url, agent, drawRequest(random, voice), random, id, book);
        slowestMs = Math.max(slowestMs, performance.now() - sent);
        outcomes.set(outcome.label, (outcomes.get(outcome.label) ?? 0) + 1);
        if (outcome.failed && failures.length < 20) failures.push(`${outcome.label}\n    ${outcome.detail}`);
        // A refused client backs off briefly (not the full Retry-After: the soak wants pressure).
        if (outcome.overloaded) await sleep(5 + random() * 20);
      }
    };
    await Promise.all([warmed, ...Array.from({ length: options.clients }, client)]);
    book.stop();
    agent.destroy();
    // Hung-up requests are cancelled at the next frame round; give the engine a moment to settle them.
    const drainUntil = Date.now() + 5000;
    while ((server.engine.requestsInFlight > 0 || server.engine.load.lanesBusy > 0) && Date.now() < drainUntil)
      await sleep(20);
    const metrics = await send(server.url, { method: 'GET', path: '/metrics' });
    const end = await sample();
    return {
      options,
      outcomes,
      requests,
      lanesBusy: server.engine.load.lanesBusy,
      inFlight: server.engine.requestsInFlight,
      samples: { start, warm: warm ?? start, end },
      failures,
      serverCounts: requestCounts(metrics.body.toString()),
      slowestRequestMs: slowestMs,
      longestLoopDelayMs: book.longestLoopDelayMs,
    };
  } finally {
    book.stop();
    agent.destroy();
    await server.close();
    await rm(catalogDir, { recursive: true, force: true });
  }
}

/** Runs shorter than this have no real warm-up (the lazily started encoder threads), so RSS is reported only. */
const MEMORY_CHECK_MIN_SECONDS = 30;

/** The checks the soak passes or fails by, each with its verdict. */
export function soakChecks(report: SoakReport): { name: string; ok: boolean }[] {
  const { warm, end } = report.samples;
  const completed = report.outcomes.get('completed, audio valid') ?? 0;
  const memory =
    report.options.seconds < MEMORY_CHECK_MIN_SECONDS
      ? []
      : [
          {
            name: `RSS growth after warm-up <= ${RSS_GROWTH_BOUND_MIB} MiB`,
            ok: end.rssMiB - warm.rssMiB <= RSS_GROWTH_BOUND_MIB,
          },
        ];
  return [
    { name: 'no failed request', ok: report.failures.length === 0 },
    { name: 'some requests completed', ok: completed > 0 },
    { name: 'lanes busy at the end = 0', ok: report.lanesBusy === 0 },
    { name: 'requests in flight at the end = 0', ok: report.inFlight === 0 },
    ...memory,
    { name: `open fds growth after warm-up <= ${FD_GROWTH_BOUND}`, ok: end.fds - warm.fds <= FD_GROWTH_BOUND },
  ];
}

/** The one table the soak prints. */
export function soakTable(report: SoakReport): string {
  const { start, warm, end } = report.samples;
  const { seconds, clients, seed } = report.options;
  const rows: [string, string][] = [
    ['soak', `${seconds} s, ${clients} clients, seed ${seed}, null engine in a worker thread, 4 lanes, queue 8`],
    ['requests', String(report.requests)],
    ...[...report.outcomes.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([label, count]): [string, string] => [`  ${label}`, String(count)]),
    ...report.serverCounts.map(([labels, count]): [string, string] => [`  server counted ${labels}`, String(count)]),
    ['slowest request, s', (report.slowestRequestMs / 1000).toFixed(1)],
    ['longest event loop delay, s', (report.longestLoopDelayMs / 1000).toFixed(1)],
    ['lanes busy at the end', String(report.lanesBusy)],
    ['requests in flight at the end', String(report.inFlight)],
    ['RSS MiB start / warm / end', `${start.rssMiB.toFixed(1)} / ${warm.rssMiB.toFixed(1)} / ${end.rssMiB.toFixed(1)}`],
    ['open fds start / warm / end', `${start.fds} / ${warm.fds} / ${end.fds}`],
    ...soakChecks(report).map(({ name, ok }): [string, string] => [`check: ${name}`, ok ? 'ok' : 'FAILED']),
    ...report.failures.map((failure): [string, string] => ['failure', failure]),
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n');
}
