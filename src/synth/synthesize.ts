// Writes a synthetic drama3 checkpoint (MODEL.md §8): config.json (marked synthetic), the Qwen3 tokenizer with
// Drama's added tokens, sharded safetensors with their index, and codec.pth. Every tensor's values depend only on
// (seed, tensor name), so the full preset streams tensor by tensor, drawn on as many threads as asked. Atomic:
// everything goes into a temporary folder beside the destination, renamed into place at the end; a failure removes it.
import { chmod, mkdtemp, readdir, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { writeShardedSafetensors } from '../checkpoint/safetensors-writer.ts';
import type { HostTensor } from '../checkpoint/tensor.ts';
import { writeTorchCheckpoint } from '../checkpoint/torch-pth.ts';
import { CODEC_FILE_NAME } from '../codec/codec.ts';
import { codecWeightBytes, synthesizeCodecWeights } from '../codec/synth-weights.ts';
import { DramaError } from '../errors.ts';
import { CONFIG_FILE, configToJson } from '../model/config.ts';
import { buildSyntheticTokenizerFiles } from '../text/vocabulary.ts';
import { throwIfCancelled, unlessCancelled } from './cancel.ts';
import { initialTensors, residualGains } from './init.ts';
import {
  drawnSpecs,
  MAX_SHARD_BYTES,
  planCheckpoint,
  type SynthExperts,
  type SynthPlan,
  type SynthPreset,
  tokenizerFacts,
} from './plan.ts';
import { checkThreads, drawCodecOnThread, synthesizeTensorsOnThreads } from './tensor-threads.ts';

export interface SynthOptions {
  readonly preset: SynthPreset;
  readonly seed: number;
  readonly experts: SynthExperts;
  /** Bytes written so far out of the checkpoint's total. */
  readonly onProgress?: (done: number, total: number) => void;
  /** Aborting stops between tensors and removes the temporary folder (e.g. on Ctrl-C during the full preset). */
  readonly signal?: AbortSignal;
  /** Threads drawing tensors (the same bytes for any count); 1, the default, draws them on this thread. */
  readonly threads?: number;
}

/** The tensors of `plan` in map order, generated lazily; an FP8 weight is followed by its block scales. */
export function* synthesizeTensors(
  plan: SynthPlan,
  seed: number,
  signal?: AbortSignal,
): Generator<[string, HostTensor]> {
  const gains = residualGains(plan.config);
  for (const { spec, scaleName } of drawnSpecs(plan)) {
    throwIfCancelled(signal);
    const { weight, scale } = initialTensors(spec, seed, gains[spec.part]);
    yield [spec.name, weight];
    if (scaleName !== undefined) yield [scaleName, scale!];
  }
}

function checkSeed(seed: number): void {
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw new DramaError('SYNTH_BAD_SEED', `seed must be a non-negative integer, got ${seed}`, { param: 'seed' });
  }
}

/** Refuses to replace anything but an absent or empty folder; returns whether an empty one must be removed first. */
async function checkDestination(outDir: string): Promise<boolean> {
  const found = await stat(outDir).catch(() => undefined);
  if (found === undefined) return false;
  if (!found.isDirectory() || (await readdir(outDir)).length > 0) {
    throw new DramaError('SYNTH_OUT_EXISTS', `${outDir} already exists and is not an empty folder`, {
      kind: 'conflict',
      param: 'out',
    });
  }
  return true;
}

export async function synthesizeCheckpoint(outDir: string, options: SynthOptions): Promise<void> {
  checkSeed(options.seed);
  const threads = options.threads ?? 1;
  checkThreads(threads);
  const destination = resolve(outDir);
  const replaceEmpty = await checkDestination(destination);
  const tokenizer = buildSyntheticTokenizerFiles();
  const plan = planCheckpoint(options.preset, options.experts, tokenizerFacts(tokenizer.tokenizerJson));
  const temporary = await mkdtemp(join(dirname(destination), `.${basename(destination)}.partial-`));
  let codecThread: ReturnType<typeof drawCodecOnThread> | undefined;
  try {
    await writeFile(join(temporary, CONFIG_FILE), `${JSON.stringify(configToJson(plan.config), null, 2)}\n`);
    await writeFile(join(temporary, 'tokenizer.json'), tokenizer.tokenizerJson);
    await writeFile(join(temporary, 'tokenizer_config.json'), tokenizer.tokenizerConfigJson);
    // With threads the codec (1.5 GB for full, one sequential stream) is drawn on a thread during the shards.
    codecThread = threads === 1 ? undefined : drawCodecOnThread(plan.config.codec, options.seed);
    const codec = codecThread === undefined ? synthesizeCodecWeights(plan.config.codec, options.seed) : undefined;
    const total = plan.totalBytes + codecWeightBytes(plan.config.codec);
    options.onProgress?.(0, total);
    const tensors =
      threads === 1
        ? synthesizeTensors(plan, options.seed, options.signal)
        : synthesizeTensorsOnThreads(plan, options.seed, threads, options.signal);
    await writeShardedSafetensors(temporary, tensors, {
      maxShardBytes: MAX_SHARD_BYTES[options.preset],
      metadata: { format: 'pt' },
      totalBytes: plan.totalBytes,
      onProgress: (done) => options.onProgress?.(done, total),
    });
    const codecWeights = codec ?? (await unlessCancelled(codecThread!.weights, options.signal));
    await writeTorchCheckpoint(join(temporary, CODEC_FILE_NAME), codecWeights);
    throwIfCancelled(options.signal);
    // mkdtemp makes the folder private; the checkpoint is an ordinary readable folder.
    await chmod(temporary, 0o755);
    if (replaceEmpty) await rmdir(destination);
    await rename(temporary, destination);
    options.onProgress?.(total, total);
  } catch (error) {
    await rm(temporary, { recursive: true, force: true });
    throw error;
  } finally {
    await codecThread?.stop();
  }
}
