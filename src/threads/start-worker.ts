// Starts a worker thread on a TypeScript entry file: the thread registers tsx's loader before importing the entry,
// which works the same under `node --import tsx`, the `tsx` command and the installed `drama3` bin. Where the code
// runs as esbuild bundles (the GPU machine has no tsx), DRAMA3_WORKER_BUNDLES names the folder of the worker
// entries bundled beside them (<entry name>.mjs), and the thread starts on that bundle instead.
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Transferable, Worker } from 'node:worker_threads';

/** The bundle of `entry` in DRAMA3_WORKER_BUNDLES, when that folder is named and holds it. */
function bundledEntry(entry: URL): string | undefined {
  const folder = process.env.DRAMA3_WORKER_BUNDLES;
  if (folder === undefined || folder === '') return undefined;
  const bundle = join(folder, `${basename(fileURLToPath(entry), '.ts')}.mjs`);
  return existsSync(bundle) ? bundle : undefined;
}

/** `transferList`: what `workerData` holds that moves to the thread rather than being copied (a MessagePort). */
export function startTypeScriptWorker(entry: URL, workerData: unknown, transferList: Transferable[] = []): Worker {
  const bundle = bundledEntry(entry);
  if (bundle !== undefined) return new Worker(bundle, { workerData, transferList });
  const loader = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(loader)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(bootstrap, { eval: true, workerData, transferList });
}
