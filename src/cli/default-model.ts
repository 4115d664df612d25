// Which runtime `serve` and `say` load: a checkpoint folder (--model), the built-in test engine (--null-model), or by
// default the embedded `tiny` synthetic checkpoint, written once into the cache folder with a progress bar.
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { CodecPrecision } from '../backend/cuda/ops/codecConv.ts';
import { checkCheckpointFolder } from '../checkpoint/regular-file.ts';
import type { BackendName } from '../engine/backend-choice.ts';
import type { RuntimeSpec } from '../engine/load-runtime.ts';
import { createProgress } from '../shared/progress.ts';
import { synthesizeCheckpoint } from '../synth/synthesize.ts';

export const DEFAULT_CACHE_DIR = join(homedir(), '.cache', 'drama3');
/** Folder name of the embedded checkpoint: bump the version when the synthetic format changes. */
const TINY_FOLDER = 'tiny-seed0-v1';

export interface RuntimeFlags {
  readonly model?: string;
  readonly nullModel?: boolean;
  readonly cacheDir: string;
  readonly prefillChunk: number;
  readonly backend?: BackendName;
  readonly codecBackend?: BackendName;
  readonly codecPrecision?: CodecPrecision;
}

function checkpointFlags(flags: RuntimeFlags) {
  const { prefillChunk, backend, codecBackend, codecPrecision } = flags;
  return {
    prefillChunk,
    backend,
    ...(codecBackend === undefined ? {} : { codecBackend }),
    ...(codecPrecision === undefined ? {} : { codecPrecision }),
  };
}

export async function resolveRuntime(flags: RuntimeFlags): Promise<RuntimeSpec> {
  if (flags.nullModel === true) return { kind: 'null' };
  if (flags.model !== undefined) {
    await checkCheckpointFolder(flags.model);
    return { kind: 'checkpoint', dir: flags.model, ...checkpointFlags(flags) };
  }
  const dir = await ensureTinyCheckpoint(flags.cacheDir);
  return { kind: 'checkpoint', dir, ...checkpointFlags(flags) };
}

/** The embedded tiny checkpoint's folder, writing it first (atomically) if it is not there yet. */
export async function ensureTinyCheckpoint(cacheDir: string): Promise<string> {
  const dir = join(cacheDir, TINY_FOLDER);
  if (existsSync(join(dir, 'config.json'))) return dir;
  await mkdir(cacheDir, { recursive: true });
  console.error(`drama3: writing the embedded tiny synthetic checkpoint (random weights: it speaks noise) to ${dir}`);
  const progress = createProgress(`  writing ${TINY_FOLDER}`, { unit: 'bytes' });
  try {
    await synthesizeCheckpoint(dir, {
      preset: 'tiny',
      seed: 0,
      experts: 'fp8',
      onProgress: (done, total) => progress.update(done, total),
    });
  } catch (error) {
    // Another process may have written it first; its atomic rename makes the folder complete or absent.
    if (!existsSync(join(dir, 'config.json'))) throw error;
  } finally {
    progress.stop();
  }
  return dir;
}
