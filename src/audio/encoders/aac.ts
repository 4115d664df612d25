// `aac`: AAC-LC in ADTS, mono, whole file (`streamable: false`). Mediabunny's encoder is asynchronous, so it
// runs in one shared worker thread: `push` posts samples there as they come (the encoding overlaps the
// synthesis); `finishAsync` awaits the worker's bytes (the server's way: its event loop keeps serving while the
// worker finalises), `finish` blocks on a shared flag until they are posted (one-shot tools); `abort` tells the
// worker to drop the job and free its encoder.
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { DramaError } from '../../errors.ts';
import type { AacWorkerCount, AacWorkerMessage, AacWorkerReply } from './aac-worker.ts';
import {
  type AudioEncoder,
  type AudioEncoderOptions,
  checkEncoderBitrate,
  checkEncoderRate,
  finishOnce,
} from './common.ts';

const AAC_SAMPLE_RATES = [7350, 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000];
const DEFAULT_BITRATE = 128_000;
/** How long `finish` waits for the worker before giving up. */
const FINISH_TIMEOUT_MS = 60_000;

let worker: Worker | undefined;
/** Jobs of the running worker waiting for a reply (to open, to finish): each is told if the worker stops first. */
let awaiting = new Set<(reason: string) => void>();
let nextJobId = 1;

/** Code that loads the worker module; from TypeScript sources it first registers tsx, which workers lack. */
function workerBootstrap(): string {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return `import(${JSON.stringify(new URL('./aac-worker.js', here).href)})`;
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  const script = JSON.stringify(new URL('./aac-worker.ts', here).href);
  return `import(${tsx}).then((tsx) => { tsx.register(); return import(${script}); })`;
}

function sharedWorker(): { thread: Worker; awaiting: Set<(reason: string) => void> } {
  if (worker === undefined) {
    worker = new Worker(workerBootstrap(), { eval: true });
    // The worker must not keep the process alive; a crash drops it so that the next encoder starts a fresh one.
    worker.unref();
    const current = worker;
    const waiting = new Set<(reason: string) => void>();
    awaiting = waiting;
    // One listener per event for all jobs (not one per job, which piles up under concurrent requests).
    const forget = (reason: unknown) => {
      if (worker === current) worker = undefined;
      for (const fail of waiting) fail(String(reason));
      waiting.clear();
    };
    worker.on('error', forget);
    worker.on('exit', (code) => forget(`exit code ${code}`));
  }
  return { thread: worker, awaiting };
}

/** The worker's one reply on `port`, or an error reply if the worker stops or `timeoutMs` passes first. */
function replyOn(
  port: MessagePort,
  waiting: Set<(reason: string) => void>,
  timeoutMs: number | undefined,
): Promise<AacWorkerReply> {
  return new Promise<AacWorkerReply>((resolve) => {
    const end = (reply: AacWorkerReply) => {
      waiting.delete(failed);
      clearTimeout(timer);
      port.close();
      resolve(reply);
    };
    const failed = (reason: string) => end({ error: `worker stopped: ${reason}` });
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => end({ error: `no reply within ${timeoutMs} ms` }), timeoutMs);
    waiting.add(failed);
    port.once('message', end);
  });
}

/** Jobs open in the shared worker (started, neither finished nor aborted); 0 when no worker runs. */
export async function openAacJobs(): Promise<number> {
  if (worker === undefined) return 0;
  const channel = new MessageChannel();
  worker.postMessage({ type: 'count', port: channel.port2 } satisfies AacWorkerMessage, [channel.port2]);
  const reply = await new Promise<AacWorkerCount>((resolve) => channel.port1.once('message', resolve));
  channel.port1.close();
  return reply.openJobs;
}

function encoderFailed(message: string): DramaError {
  return new DramaError('AUDIO_ENCODER_FAILED', `AAC encoding failed: ${message}`, { kind: 'internal' });
}

export async function createAacEncoder(options: AudioEncoderOptions): Promise<AudioEncoder> {
  checkEncoderRate('aac', options.sampleRate, AAC_SAMPLE_RATES);
  const bitrate = options.bitrate ?? DEFAULT_BITRATE;
  checkEncoderBitrate('aac', bitrate, 8000, 512000);
  const { thread, awaiting: waiting } = sharedWorker();
  const id = nextJobId++;
  const post = (message: AacWorkerMessage, transfer: readonly (ArrayBuffer | MessagePort)[] = []) =>
    thread.postMessage(message, transfer);
  // Wait until the worker has loaded and opened this job: its start-up needs the main thread's event loop.
  const started = new MessageChannel();
  post({ type: 'start', id, sampleRate: options.sampleRate, bitrate, port: started.port2 }, [started.port2]);
  const startReply = await replyOn(started.port1, waiting, undefined);
  if ('error' in startReply) throw encoderFailed(startReply.error);
  return finishOnce(
    { format: 'aac', sampleRate: options.sampleRate, streamable: false },
    {
      push(pcm) {
        if (pcm.length > 0) {
          const samples = pcm.slice();
          post({ type: 'samples', id, samples }, [samples.buffer]);
        }
        return new Uint8Array(0);
      },
      finish() {
        const flag = new Int32Array(new SharedArrayBuffer(4));
        const channel = new MessageChannel();
        post({ type: 'finish', id, port: channel.port2, flag }, [channel.port2]);
        const waited = Atomics.wait(flag, 0, 0, FINISH_TIMEOUT_MS);
        const received = receiveMessageOnPort(channel.port1);
        channel.port1.close();
        if (waited === 'timed-out' || received === undefined)
          throw encoderFailed(`no reply within ${FINISH_TIMEOUT_MS} ms`);
        const reply = received.message as AacWorkerReply;
        if ('error' in reply) throw encoderFailed(reply.error);
        return reply.bytes;
      },
      async finishAsync() {
        const channel = new MessageChannel();
        post({ type: 'finish', id, port: channel.port2 }, [channel.port2]);
        const reply = await replyOn(channel.port1, waiting, FINISH_TIMEOUT_MS);
        if ('error' in reply) throw encoderFailed(reply.error);
        return reply.bytes;
      },
      abort() {
        post({ type: 'abort', id });
      },
    },
  );
}
