// Draws a plan's tensors on worker threads (tensor-worker.ts) and yields them in map order, the same tensors as
// synthesizeTensors: every tensor depends only on (seed, name), so which thread draws it changes no byte. A few
// tensors are in flight at a time (a count and a byte budget), their buffers handed over rather than copied. The
// threads are stopped on every way out: the last tensor, an error, an abort, or the consumer stopping early.
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { type HostTensor, tensorByteLength } from '../checkpoint/tensor.ts';
import type { CodecConfig } from '../codec/config.ts';
import { DramaError } from '../errors.ts';
import type { TensorSpec } from '../model/weights.ts';
import { deserializeError } from '../threads/serialize-error.ts';
import { startTypeScriptWorker } from '../threads/start-worker.ts';
import { throwIfCancelled, unlessCancelled } from './cancel.ts';
import { residualGains } from './init.ts';
import { drawnSpecs, type SynthPlan } from './plan.ts';
import type { CodecJob, TensorAnswer, TensorJob } from './tensor-worker.ts';

/** More threads than this gain little: the main thread writes every byte to disk. */
const MAX_DEFAULT_THREADS = 16;
/** Bytes drawn but not yet yielded, past which no further tensor is started (one larger tensor still goes alone). */
const BYTES_IN_FLIGHT = 1024 * 2 ** 20;

/** The machine's available parallelism, at most MAX_DEFAULT_THREADS. */
export function defaultSynthThreads(): number {
  return Math.max(1, Math.min(MAX_DEFAULT_THREADS, availableParallelism()));
}

export function checkThreads(threads: number): void {
  if (!Number.isSafeInteger(threads) || threads < 1) {
    throw new DramaError('SYNTH_BAD_THREADS', `threads must be a positive integer, got ${threads}`, {
      param: 'threads',
    });
  }
}

interface Drawn {
  readonly weight: HostTensor;
  readonly scale?: HostTensor;
}

type Answered = Exclude<TensorAnswer, { error: unknown }>;

interface Pending {
  readonly job: TensorJob | CodecJob;
  readonly resolve: (answer: Answered) => void;
  readonly reject: (error: Error) => void;
}

/** A fixed set of threads; jobs queue until a thread is free, answers are matched by id. */
class TensorThreads {
  private readonly workers: Worker[] = [];
  private readonly idle: Worker[] = [];
  private readonly queue: Pending[] = [];
  private readonly running = new Map<number, Pending>();
  private failure: DramaError | undefined;
  private closing = false;

  constructor(private readonly threads: number) {}

  start(): void {
    for (let index = 0; index < this.threads; index++) {
      const worker = startTypeScriptWorker(new URL('./tensor-worker.ts', import.meta.url), undefined);
      worker.on('message', (answer: TensorAnswer) => this.answered(worker, answer));
      worker.on('error', (error) => this.fail(error.message));
      worker.on('exit', (code) => this.fail(`exit code ${code}`));
      this.workers.push(worker);
      this.idle.push(worker);
    }
  }

  draw(job: TensorJob): Promise<Drawn> {
    return this.run(job, (answer) => answer as Drawn);
  }

  drawCodec(job: CodecJob): Promise<Map<string, HostTensor>> {
    return this.run(job, (answer) => (answer as { codec: Map<string, HostTensor> }).codec);
  }

  private run<T>(job: TensorJob | CodecJob, pick: (answer: Answered) => T): Promise<T> {
    const answered = new Promise<T>((resolve, reject) => {
      if (this.failure !== undefined) reject(this.failure);
      else this.queue.push({ job, resolve: (answer) => resolve(pick(answer)), reject });
    });
    // The caller awaits it later (tensors in map order); a failure before then is not an unhandled rejection.
    answered.catch(() => undefined);
    this.dispatch();
    return answered;
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.workers.map((worker) => worker.terminate()));
  }

  private dispatch(): void {
    while (this.idle.length > 0 && this.queue.length > 0) {
      const pending = this.queue.shift()!;
      this.running.set(pending.job.id, pending);
      this.idle.pop()!.postMessage(pending.job);
    }
  }

  private answered(worker: Worker, answer: TensorAnswer): void {
    const pending = this.running.get(answer.id);
    this.running.delete(answer.id);
    this.idle.push(worker);
    if ('error' in answer) pending?.reject(deserializeError(answer.error));
    else pending?.resolve(answer);
    this.dispatch();
  }

  private fail(reason: string): void {
    if (this.closing || this.failure !== undefined) return;
    this.failure = new DramaError('SYNTH_THREAD_FAILED', `a synthesis thread stopped: ${reason}`, {
      kind: 'internal',
    });
    for (const pending of [...this.running.values(), ...this.queue]) pending.reject(this.failure);
    this.running.clear();
    this.queue.length = 0;
  }
}

/** synthesizeCodecWeights(codec, seed) on a thread of its own, drawn while the shards are written; `stop` ends it. */
export function drawCodecOnThread(
  codec: CodecConfig,
  seed: number,
): { weights: Promise<Map<string, HostTensor>>; stop: () => Promise<void> } {
  const pool = new TensorThreads(1);
  pool.start();
  return { weights: pool.drawCodec({ id: 0, codec, seed }), stop: () => pool.close() };
}

/** The tensors of `plan` in map order, drawn on `threads` threads; an FP8 weight is followed by its block scales. */
export async function* synthesizeTensorsOnThreads(
  plan: SynthPlan,
  seed: number,
  threads: number,
  signal?: AbortSignal,
): AsyncGenerator<[string, HostTensor]> {
  checkThreads(threads);
  const gains = residualGains(plan.config);
  const jobs = drawnSpecs(plan);
  const bytes = (spec: TensorSpec) => tensorByteLength(spec.dtype, spec.shape);
  const inFlight: { spec: TensorSpec; drawn: Promise<Drawn> }[] = [];
  let inFlightBytes = 0;
  let started = 0;
  const pool = new TensorThreads(threads);
  try {
    pool.start();
    const startMore = () => {
      while (started < jobs.length && inFlight.length < 2 * threads) {
        const { spec } = jobs[started]!;
        if (inFlight.length > 0 && inFlightBytes + bytes(spec) > BYTES_IN_FLIGHT) break;
        inFlight.push({ spec, drawn: pool.draw({ id: started, spec, seed, residualGain: gains[spec.part] }) });
        inFlightBytes += bytes(spec);
        started += 1;
      }
    };
    for (const { spec, scaleName } of jobs) {
      throwIfCancelled(signal);
      startMore();
      const next = inFlight.shift()!;
      inFlightBytes -= bytes(next.spec);
      const { weight, scale } = await unlessCancelled(next.drawn, signal);
      yield [spec.name, weight];
      if (scaleName !== undefined) yield [scaleName, scale!];
    }
  } finally {
    await pool.close();
  }
}
