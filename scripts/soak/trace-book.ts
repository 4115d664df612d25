// The requests still open, with their lifecycle events from both ends (the client's own and the server's trace, by
// request id) and a stall clock: a request fails as stalled when it shows no progress for STALL_MS of time in which
// the event loop was responsive. Time the loop spent starved (the process not scheduled on a loaded machine, or a
// long task) is not counted, so a slow machine makes requests slow, not failed, while a request that waits on a
// lost wake-up on an idle server is caught in STALL_MS. Events are forgotten once a request ends well.

/** Responsive no-progress time after which a request is called stalled. */
export const STALL_MS = 20_000;
/** How often the stall clocks advance. */
const TICK_MS = 100;
/** Most time one tick may count: a tick that comes later than this found the loop starved for the rest. */
const MOST_COUNTED_PER_TICK_MS = 2 * TICK_MS;

interface OpenRequest {
  readonly began: number;
  readonly events: string[];
  idleMs: number;
  readonly onStall: () => void;
}

export class TraceBook {
  private readonly open = new Map<string, OpenRequest>();
  private ticker: NodeJS.Timeout | undefined;
  private lastTick = 0;
  /** Longest gap between two ticks beyond their period: how long the event loop could not run at worst. */
  longestLoopDelayMs = 0;

  constructor(private readonly stallMs: number = STALL_MS) {}

  /** Starts the stall clocks. */
  start(): void {
    this.lastTick = performance.now();
    this.ticker = setInterval(() => this.tick(), TICK_MS);
  }

  stop(): void {
    clearInterval(this.ticker);
  }

  /** Opens a request's record; `onStall` is called once if it stalls. */
  begin(id: string, onStall: () => void): void {
    const began = performance.now();
    this.open.set(id, { began, events: [`sent at ${Math.round(began)} ms`], idleMs: 0, onStall });
  }

  /** Adds an event of an open request, which is progress (late events of a forgotten one are dropped). */
  readonly record = (id: string, event: string): void => {
    const entry = this.open.get(id);
    if (entry === undefined) return;
    entry.events.push(`${Math.round(performance.now() - entry.began)} ms ${event}`);
    entry.idleMs = 0;
  };

  /** Progress not worth an event line (another chunk of the reply). */
  progress(id: string): void {
    const entry = this.open.get(id);
    if (entry !== undefined) entry.idleMs = 0;
  }

  /** The request's events so far, in order. */
  events(id: string): readonly string[] {
    return this.open.get(id)?.events ?? [];
  }

  forget(id: string): void {
    this.open.delete(id);
  }

  private tick(): void {
    const now = performance.now();
    const elapsed = now - this.lastTick;
    this.lastTick = now;
    this.longestLoopDelayMs = Math.max(this.longestLoopDelayMs, elapsed - TICK_MS);
    const counted = Math.min(elapsed, MOST_COUNTED_PER_TICK_MS);
    for (const entry of this.open.values()) {
      const before = entry.idleMs;
      entry.idleMs += counted;
      if (before < this.stallMs && entry.idleMs >= this.stallMs) entry.onStall();
    }
  }
}
