// The main thread's handle on the engine: starts it (worker thread, or in-thread for tests), bounds the queue
// (lanes + queue limit requests in flight, beyond that 503 overloaded), and routes each request's events to it.
import { EventEmitter } from 'node:events';
import type { Worker } from 'node:worker_threads';
import { DramaError, type ErrorKind } from '../errors.ts';
import { EngineCore, type EngineSettings } from './engine-core.ts';
import { loadRuntime, type RuntimeSpec } from './load-runtime.ts';
import type { EngineCommand, EngineEvent, EngineInfo, EngineStats, SerializedError, SpeechJob } from './protocol.ts';
import { startTypeScriptWorker } from './threads.ts';

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

export interface RequestHandle {
  readonly id: number;
  cancel(): void;
}

export function toDramaError(error: SerializedError): DramaError {
  return new DramaError(error.code, error.message, { kind: error.kind as ErrorKind, param: error.param });
}

/** Runs `loadRuntime` and the engine core inside a worker thread (which starts the decode thread). */
function startWorker(spec: RuntimeSpec, settings: EngineSettings): Worker {
  return startTypeScriptWorker(new URL('./engine-worker.ts', import.meta.url), { spec, settings });
}

export class Engine extends EventEmitter<{ stats: [EngineStats] }> {
  private readonly requestListeners = new Map<number, (event: RequestEvent) => void>();
  private nextId = 1;
  private inFlight = 0;
  private closed = false;
  /** Why new requests are refused after the engine thread stopped on its own. */
  private crash: string | undefined;
  stats: EngineStats = { lanesBusy: 0, waiting: 0, rounds: 0, frames: 0 };

  private constructor(
    readonly info: EngineInfo,
    private readonly queueLimit: number,
    private readonly send: (command: EngineCommand) => void,
    private readonly stop: () => Promise<void>,
  ) {
    super();
  }

  static async start(options: EngineOptions): Promise<Engine> {
    if (options.thread === 'inline') {
      let engine: Engine | undefined;
      const runtime = await loadRuntime(options.runtime);
      const emit = (event: EngineEvent) => engine!.receive(event);
      const core = new EngineCore(runtime, options.settings, emit);
      engine = new Engine(
        core.info,
        options.queueLimit,
        (command) => core.handle(command),
        async () => {},
      );
      return engine;
    }
    const worker = startWorker(options.runtime, options.settings);
    return new Promise((resolve, reject) => {
      let engine: Engine | undefined;
      worker.on('message', (event: EngineEvent) => {
        if (event.type === 'ready') {
          engine = new Engine(
            event.info,
            options.queueLimit,
            (command) => worker.postMessage(command),
            async () => {
              worker.postMessage({ type: 'shutdown' });
              await worker.terminate();
            },
          );
          resolve(engine);
        } else if (event.type === 'load-failed') {
          reject(toDramaError(event.error));
          void worker.terminate();
        } else engine?.receive(event);
      });
      worker.on('error', (error) => {
        if (engine === undefined) reject(error);
        else engine.failAll('ENGINE_CRASHED', `the engine thread failed: ${error.message}`);
      });
      worker.on('exit', (code) => {
        if (engine === undefined)
          reject(new DramaError('ENGINE_CRASHED', `the engine thread exited with code ${code}`));
        else engine.stopped(`the engine thread exited with code ${code}`);
      });
    });
  }

  /** Why the engine thread stopped on its own, if it did: the server can no longer speak. */
  get failure(): string | undefined {
    return this.crash;
  }

  /** Requests admitted or waiting (not yet finished, failed or settled after cancel). */
  get requestsInFlight(): number {
    return this.inFlight;
  }

  /** Sends a request; throws `ENGINE_OVERLOADED` when lanes and queue are full. */
  submit(job: SpeechJob, listener: (event: RequestEvent) => void): RequestHandle {
    if (this.crash !== undefined) throw new DramaError('ENGINE_CRASHED', this.crash, { kind: 'internal' });
    if (this.closed) throw new DramaError('ENGINE_CLOSED', 'the server is shutting down', { kind: 'overloaded' });
    const capacity = this.info.lanes + this.queueLimit;
    if (this.inFlight >= capacity) {
      throw new DramaError(
        'ENGINE_OVERLOADED',
        `all ${this.info.lanes} lanes are busy and the queue of ${this.queueLimit} is full; retry shortly`,
        { kind: 'overloaded' },
      );
    }
    const id = this.nextId++;
    this.inFlight += 1;
    this.requestListeners.set(id, listener);
    this.send({ type: 'submit', id, job });
    return { id, cancel: () => this.requestListeners.has(id) && this.send({ type: 'cancel', id }) };
  }

  /** A catalog voice was deleted or replaced: its reference cache entries are dropped. */
  forgetVoice(name: string): void {
    if (!this.closed && this.crash === undefined) this.send({ type: 'forget-voice', name });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.send({ type: 'shutdown' });
    await this.stop();
    this.failAll('ENGINE_CLOSED', 'the server shut down before the request finished');
  }

  /** The engine thread ended without being asked: open requests fail, new ones are refused. */
  private stopped(reason: string): void {
    if (this.closed) return;
    this.crash = reason;
    this.failAll('ENGINE_CRASHED', reason);
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
    if (event.type === 'finished' || event.type === 'failed' || event.type === 'cancelled') {
      this.requestListeners.delete(event.id);
      this.inFlight -= 1;
    }
    listener(event);
  }

  /** Every open request fails with the cause. */
  private failAll(code: string, message: string): void {
    const serialized = { code, message, kind: 'internal', param: undefined };
    for (const id of [...this.requestListeners.keys()]) this.receive({ type: 'failed', id, error: serialized });
  }
}
