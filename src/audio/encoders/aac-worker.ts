// Worker thread that runs mediabunny's AAC-LC encoder (ADTS output). Mediabunny is asynchronous; this thread
// lets the main thread's `finish()` stay synchronous: it blocks on a shared flag until the bytes are posted.
// Messages: start {id, sampleRate, bitrate, port}; samples {id, samples: Float32Array}; finish {id, port, flag?};
// abort {id} (drop the job, free its encoder); count {port} (replies {openJobs} once pending aborts have freed theirs).
import { type MessagePort, parentPort } from 'node:worker_threads';
import { registerAacEncoder } from '@mediabunny/aac-encoder';
import { AdtsOutputFormat, AudioSample, AudioSampleSource, BufferTarget, Output } from 'mediabunny';

registerAacEncoder();

interface Job {
  readonly sampleRate: number;
  readonly target: BufferTarget;
  readonly output: Output;
  readonly source: AudioSampleSource;
  /** Work for this job runs in order on this chain. */
  queue: Promise<void>;
  samplesAdded: number;
}

export type AacWorkerMessage =
  | { type: 'start'; id: number; sampleRate: number; bitrate: number; port: MessagePort }
  | { type: 'samples'; id: number; samples: Float32Array }
  | { type: 'finish'; id: number; port: MessagePort; flag?: Int32Array }
  | { type: 'abort'; id: number }
  | { type: 'count'; port: MessagePort };

export type AacWorkerReply = { bytes: Uint8Array } | { error: string };

export interface AacWorkerCount {
  readonly openJobs: number;
}

const jobs = new Map<number, Job>();
/** Cancellations of aborted jobs still releasing their encoders. */
const releasing = new Set<Promise<void>>();

function start(id: number, sampleRate: number, bitrate: number, port: MessagePort): void {
  try {
    const target = new BufferTarget();
    const output = new Output({ format: new AdtsOutputFormat(), target });
    const source = new AudioSampleSource({ codec: 'aac', bitrate });
    output.addAudioTrack(source);
    jobs.set(id, { sampleRate, target, output, source, queue: output.start(), samplesAdded: 0 });
    port.postMessage({ bytes: new Uint8Array(0) } satisfies AacWorkerReply);
  } catch (error) {
    port.postMessage({ error: error instanceof Error ? error.message : String(error) } satisfies AacWorkerReply);
  }
  port.close();
}

function addSamples(job: Job, samples: Float32Array): void {
  const timestamp = job.samplesAdded / job.sampleRate;
  job.samplesAdded += samples.length;
  job.queue = job.queue.then(async () => {
    const sample = new AudioSample({
      data: samples,
      format: 'f32',
      numberOfChannels: 1,
      sampleRate: job.sampleRate,
      timestamp,
    });
    try {
      await job.source.add(sample);
    } finally {
      sample.close();
    }
  });
}

function finish(id: number, job: Job | undefined, port: MessagePort, flag: Int32Array | undefined): void {
  jobs.delete(id);
  const done = (reply: AacWorkerReply) => {
    port.postMessage(reply);
    port.close();
    // A caller blocked on the flag (the synchronous finish) wakes up; an awaiting one gets the message.
    if (flag === undefined) return;
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
  };
  if (job === undefined) {
    done({ error: `no AAC job ${id}` });
    return;
  }
  if (job.samplesAdded === 0) {
    done({ bytes: new Uint8Array(0) });
    return;
  }
  job.queue
    .then(() => job.output.finalize())
    .then(() => done({ bytes: new Uint8Array(job.target.buffer ?? new ArrayBuffer(0)) }))
    .catch((error: unknown) => done({ error: error instanceof Error ? error.message : String(error) }));
}

function abort(id: number): void {
  const job = jobs.get(id);
  if (job === undefined) return;
  jobs.delete(id);
  // Samples still queued fail against the cancelled output; that is expected, so their rejection is dropped.
  job.queue.catch(() => {});
  const released = job.output.cancel().catch(() => {});
  releasing.add(released);
  void released.then(() => releasing.delete(released));
}

function count(port: MessagePort): void {
  void Promise.all(releasing).then(() => {
    port.postMessage({ openJobs: jobs.size } satisfies AacWorkerCount);
    port.close();
  });
}

parentPort!.on('message', (message: AacWorkerMessage) => {
  switch (message.type) {
    case 'start':
      start(message.id, message.sampleRate, message.bitrate, message.port);
      return;
    case 'samples': {
      const job = jobs.get(message.id);
      if (job !== undefined) addSamples(job, message.samples);
      return;
    }
    case 'finish':
      finish(message.id, jobs.get(message.id), message.port, message.flag);
      return;
    case 'abort':
      abort(message.id);
      return;
    case 'count':
      count(message.port);
      return;
  }
});
