// Starts a worker thread on a TypeScript entry file: the thread registers tsx's loader before importing the entry,
// which works the same under `node --import tsx`, the `tsx` command and the installed `drama3` bin. Also what the
// engine's threads hand over rather than copy when they post an event.
import { Worker } from 'node:worker_threads';
import type { DecodeReply } from './decode-thread.ts';

export function startTypeScriptWorker(entry: URL, workerData: unknown): Worker {
  const loader = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(loader)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(bootstrap, { eval: true, workerData });
}

/** The buffers a message hands over instead of copying: an audio event's PCM and codes. */
export function transferList(event: DecodeReply): ArrayBuffer[] {
  return event.type === 'audio' ? [event.pcm.buffer as ArrayBuffer, event.codes.buffer as ArrayBuffer] : [];
}
