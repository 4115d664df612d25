// The main thread's handle on the engine: starts it (worker thread, or in-thread for tests), bounds the queue
// (lanes + queue limit requests in flight, beyond that 503 overloaded), and routes each request's events to it. A
// worker that dies fails its open requests and is started again, up to MAX_ENGINE_RESTARTS times.
import { EventEmitter } from 'node:events';
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import { DramaError } from '../errors.ts';
import { deserializeError } from '../threads/serialize-error.ts';
import { startTypeScriptWorker } from '../threads/start-worker.ts';
import { EngineCore, type EngineSettings } from './engine-core.ts';
import type { DeviceMemory } from './lane-budget.ts';
import { EarlyLanePlan } from './lane-plan.ts';
import { loadRuntime, type RuntimeSpec } from './load-runtime.ts';
import type { EngineCommand, EngineEvent, EngineInfo, EngineStats, RoundTime, SpeechJob } from './protocol.ts';

export interface EngineOptions {
  readonly runtime: RuntimeSpec;
  readonly settings: EngineSettings;
  /** Requests that may wait for a lane; more are refused with 503. */
  readonly queueLimit: number;
  /** 'worker' (the server) or 'inline' (tests that want no thread start-up). */
  readonly thread: 'worker' | 'inline';
}

/** Events of one request, in order: admitted, audio…, then exactly one of finished, failed, cancelled. */
export type RequestEvent = Extract<EngineEvent, { id: number }>;

/** Where the requests holding admission are: what a 503 (lanes + queue full) is made of. */
export interface EngineLoad {
  /** Requests holding admission: not yet finished, failed or settled after cancel. */
  readonly inFlight: number;
  /** Waiting for a lane: being prepared (references, prompt) or admitted and queued. */
  readonly queued: number;
  /** On a lane, or done generating with frames still waiting for decode. */
  readonly lanesBusy: number;
  /** Done generating, frames still waiting for decode (part of lanesBusy). */
  readonly decodeBacklog: number;
  /** Lane memory the running requests leave free, in the unit of EngineInfo.memory. */
  readonly laneMemoryFree: number;
  /** The device's allocator ledger (absent: lane state in host memory). */
  readonly deviceMemory?: DeviceMemory;
  /** The frame rounds' wall time by kind since the engine (re)started (absent before its first round). */
  readonly roundTime?: RoundTime;
}

export interface RequestHandle {
  readonly id: number;
  cancel(): void;
}

/**
 * Runs `loadRuntime` and the engine core inside a worker thread (which starts the decode thread); `audio` moves on to
 * the decode thread, which sends decoded audio and terminal events on it straight to this thread.
 */
function startWorker(spec: RuntimeSpec, settings: EngineSettings, audio: MessagePort): Worker {
  const entry = new URL('./engine-worker.ts', import.meta.url);
  return startTypeScriptWorker(entry, { spec, settings, audio }, [audio]);
}

/** How the host reaches a running engine core. */
interface EngineLink {
  send(command: EngineCommand): void;
  stop(): Promise<void>;
}

/** Times a dead engine thread is started again before the engine gives up for good. */
export const MAX_ENGINE_RESTARTS = 3;

/**
 * Starts the engine worker; resolves with its info and link once it is ready, and reports its death later. Events come
 * on two ports: the engine thread's (`onEvent`), and the decode thread's audio and terminal events (`onDecoded`).
 */
function spawnWorker(
  options: EngineOptions,
  onEvent: (event: EngineEvent) => void,
  onDecoded: (event: EngineEvent) => void,
  onDeath: (reason: string) => void,
): Promise<{ info: EngineInfo; link: EngineLink }> {
  const audio = new MessageChannel();
  const worker = startWorker(options.runtime, options.settings, audio.port2);
  audio.port1.on('message', onDecoded);
  worker.once('exit', () => audio.port1.close());
  return new Promise((resolve, reject) => {
    let ready = false;
    let lastError = '';
    worker.on('message', (event: EngineEvent) => {
      if (event.type === 'ready') {
        ready = true;
        const link: EngineLink = {
          send: (command) => worker.postMessage(command),
          stop: async () => {
            worker.postMessage({ type: 'shutdown' });
            await worker.terminate();
            audio.port1.close();
          },
        };
        resolve({ info: event.info, link });
      } else if (event.type === 'load-failed') {
        reject(deserializeError(event.error));
        void worker.terminate();
      } else if (ready) onEvent(event);
    });
    worker.on('error', (error) => {
      lastError = error.message;
    });
    worker.on('exit', (code) => {
      const reason = `the engine thread exited with code ${code}${lastError === '' ? '' : `: ${lastError}`}`;
      if (!ready) reject(new DramaError('ENGINE_CRASHED', reason, { kind: 'internal' }));
      else onDeath(reason);
    });
  });
}

export class Engine extends EventEmitter<{ stats: [EngineStats] }> {
  private readonly requestListeners = new Map<number, (event: RequestEvent) => void>();
  /** Requests in flight that passed admission (their 'admitted' event arrived). */
  private readonly admitted = new Set<number>();
  /**
   * Decoded events that arrived before their request's 'admitted' (the two come on different ports, so their order
   * across threads is not promised): passed on right after it.
   */
  private readonly early = new Map<number, EngineEvent[]>();
  private nextId = 1;
  private closed = false;
  /** Why new requests are refused after the engine thread stopped on its own and could not be restarted. */
  private crash: string | undefined;
  /** Set while a dead engine thread is being started again. */
  private restarting: string | undefined;
  private restarts = 0;
  stats: EngineStats = { lanesBusy: 0, waiting: 0, rounds: 0, frames: 0 };

  private constructor(
    readonly info: EngineInfo,
    private readonly queueLimit: number,
    private link: EngineLink,
    private readonly respawn?: () => Promise<{ info: EngineInfo; link: EngineLink }>,
  ) {
    super();
  }

  static async start(options: EngineOptions): Promise<Engine> {
    let engine: Engine | undefined;
    const onEvent = (event: EngineEvent) => engine?.receive(event);
    const onDecoded = (event: EngineEvent) => engine?.receiveDecoded(event);
    if (options.thread === 'inline') {
      const lanes = new EarlyLanePlan(options.settings);
      const runtime = await loadRuntime(options.runtime, { onModel: lanes.onModel });
      const core = new EngineCore(runtime, options.settings, onEvent, undefined, lanes.take());
      // Commands run in order after the caller's turn, as they do across the worker boundary.
      const link = {
        send: (command: EngineCommand) => queueMicrotask(() => core.handle(command)),
        stop: async () => {},
      };
      engine = new Engine(core.info, options.queueLimit, link);
      return engine;
    }
    const onDeath = (reason: string) => engine?.stopped(reason);
    const respawn = () => spawnWorker(options, onEvent, onDecoded, onDeath);
    const { info, link } = await respawn();
    engine = new Engine(info, options.queueLimit, link, respawn);
    return engine;
  }

  /** Why the engine cannot speak now (its thread died; restarting, or for good), if it cannot. */
  get failure(): string | undefined {
    return this.crash ?? this.restarting;
  }

  /** Requests admitted or waiting (not yet finished, failed or settled after cancel). */
  get requestsInFlight(): number {
    return this.requestListeners.size;
  }

  /** Admission's view of the requests in flight, from the listener map and the scheduler's latest stats. */
  get load(): EngineLoad {
    const inFlight = this.requestListeners.size;
    const waiting = Math.min(this.stats.waiting, this.admitted.size);
    const onLanes = Math.min(this.stats.lanesBusy, this.admitted.size - waiting);
    return {
      inFlight,
      queued: inFlight - this.admitted.size + waiting,
      lanesBusy: this.admitted.size - waiting,
      decodeBacklog: this.admitted.size - waiting - onLanes,
      laneMemoryFree: this.info.memory.laneBudget - (this.stats.laneMemoryReserved ?? 0),
      deviceMemory: this.stats.deviceMemory ?? this.info.memory.device,
      roundTime: this.stats.roundTime,
    };
  }

  /** Sends a request; throws `ENGINE_OVERLOADED` when lanes and queue are full. */
  submit(job: SpeechJob, listener: (event: RequestEvent) => void): RequestHandle {
    if (this.crash !== undefined) throw new DramaError('ENGINE_CRASHED', this.crash, { kind: 'internal' });
    if (this.restarting !== undefined) {
      throw new DramaError('ENGINE_RESTARTING', `${this.restarting}; it is restarting, retry shortly`, {
        kind: 'overloaded',
      });
    }
    if (this.closed) throw new DramaError('ENGINE_CLOSED', 'the server is shutting down', { kind: 'overloaded' });
    const capacity = this.info.lanes + this.queueLimit;
    if (this.requestListeners.size >= capacity) {
      throw new DramaError(
        'ENGINE_OVERLOADED',
        `all ${this.info.lanes} lanes are busy and the queue of ${this.queueLimit} is full; retry shortly`,
        { kind: 'overloaded' },
      );
    }
    const id = this.nextId++;
    this.requestListeners.set(id, listener);
    this.link.send({ type: 'submit', id, job });
    return { id, cancel: () => this.requestListeners.has(id) && this.link.send({ type: 'cancel', id }) };
  }

  /** A catalog voice was deleted or replaced: its reference cache entries are dropped. */
  forgetVoice(name: string): void {
    if (!this.closed && this.failure === undefined) this.link.send({ type: 'forget-voice', name });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.link.send({ type: 'shutdown' });
    await this.link.stop();
    this.failAll('ENGINE_CLOSED', 'the server shut down before the request finished');
  }

  /** The engine thread ended without being asked: open requests fail, and the thread is started again (a few times). */
  private stopped(reason: string): void {
    if (this.closed) return;
    this.failAll('ENGINE_CRASHED', reason);
    if (this.respawn === undefined || this.restarts >= MAX_ENGINE_RESTARTS) {
      this.crash = reason;
      return;
    }
    this.restarts += 1;
    this.restarting = reason;
    this.stats = { lanesBusy: 0, waiting: 0, rounds: 0, frames: 0 };
    this.respawn().then(
      ({ link }) => {
        if (this.closed) void link.stop();
        else this.link = link;
        this.restarting = undefined;
      },
      (error: unknown) => {
        this.restarting = undefined;
        this.crash = `${reason}; starting it again failed: ${error instanceof Error ? error.message : String(error)}`;
      },
    );
  }

  /** An audio or terminal event from the decode thread: held until its request's 'admitted' has been passed on. */
  private receiveDecoded(event: EngineEvent): void {
    if (!('id' in event) || !this.requestListeners.has(event.id)) return;
    if (this.admitted.has(event.id)) {
      this.receive(event);
      return;
    }
    const held = this.early.get(event.id);
    if (held === undefined) this.early.set(event.id, [event]);
    else held.push(event);
  }

  private receive(event: EngineEvent): void {
    if (event.type === 'stats') {
      this.stats = event.stats;
      this.emit('stats', event.stats);
      return;
    }
    if (event.type === 'ready' || event.type === 'load-failed') return;
    const listener = this.requestListeners.get(event.id);
    // Late events of a request that already ended (audio decoded after a cancel, a second failure) are dropped.
    if (listener === undefined) return;
    if (event.type === 'admitted') this.admitted.add(event.id);
    if (event.type === 'finished' || event.type === 'failed' || event.type === 'cancelled') {
      this.requestListeners.delete(event.id);
      this.admitted.delete(event.id);
      this.early.delete(event.id);
    }
    listener(event);
    if (event.type !== 'admitted') return;
    const held = this.early.get(event.id);
    this.early.delete(event.id);
    for (const decoded of held ?? []) this.receive(decoded);
  }

  /** Every open request fails with the cause. */
  private failAll(code: string, message: string): void {
    const serialized = { code, message, kind: 'internal', param: undefined };
    for (const id of [...this.requestListeners.keys()]) this.receive({ type: 'failed', id, error: serialized });
  }
}
