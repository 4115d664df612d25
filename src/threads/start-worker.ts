// Starts a worker thread on a TypeScript entry file: the thread registers tsx's loader before importing the entry,
// which works the same under `node --import tsx`, the `tsx` command and the installed `drama3` bin.
import { Worker } from 'node:worker_threads';

export function startTypeScriptWorker(entry: URL, workerData: unknown): Worker {
  const loader = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(loader)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(bootstrap, { eval: true, workerData });
}
