// `drama3 synth --preset tiny|small|full --out DIR [--seed N] [--experts fp8|bf16] [--threads N] [--dry-run [--list]]`:
// writes a synthetic checkpoint (random weights in the real file format) or, with --dry-run, only describes it.
import { type Command, InvalidArgumentError, Option } from 'commander';
import { DramaError, isDramaError } from '../errors.ts';
import { SYNTHETIC_WEIGHTS_NOTICE } from '../model/config.ts';
import { createProgress, formatBytes } from '../shared/progress.ts';
import { planCheckpoint, type SynthExperts, type SynthPlan, type SynthPreset, tokenizerFacts } from '../synth/plan.ts';
import { synthesizeCheckpoint } from '../synth/synthesize.ts';
import { defaultSynthThreads } from '../synth/tensor-threads.ts';
import { buildSyntheticTokenizerFiles } from '../text/vocabulary.ts';

export interface SynthFlags {
  readonly preset: SynthPreset;
  readonly out?: string;
  readonly seed: number;
  readonly experts: SynthExperts;
  /** Threads drawing tensors; the machine's available parallelism (at most 16) when absent. */
  readonly threads?: number;
  readonly dryRun?: boolean;
  readonly list?: boolean;
}

type Print = (line: string) => void;

/** The plan's summary: tensors, parameters and bytes, then per dtype (and every tensor with `list`). */
function describePlan(plan: SynthPlan, list: boolean): string[] {
  const lines = [
    `${plan.specs.length} tensors, ${plan.parameters} parameters (${(plan.parameters / 1e9).toFixed(2)}e9), ` +
      `${formatBytes(plan.totalBytes)} in safetensors`,
  ];
  for (const [dtype, count] of Object.entries(plan.countByDtype)) {
    const bytes = plan.bytesByDtype[dtype as keyof typeof plan.bytesByDtype] ?? 0;
    lines.push(`  ${dtype.padEnd(8)} ${String(count).padStart(7)} tensors  ${formatBytes(bytes).padStart(10)}`);
  }
  if (list) {
    for (const spec of plan.specs) lines.push(`  ${spec.name} ${spec.dtype} [${spec.shape.join(', ')}]`);
  }
  return lines;
}

function parseThreads(value: string): number {
  const threads = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(threads) || threads < 1) {
    throw new InvalidArgumentError(`must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return threads;
}

function parseSeed(value: string): number {
  const seed = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(seed)) {
    throw new InvalidArgumentError(`must be a non-negative integer, got ${JSON.stringify(value)}`);
  }
  return seed;
}

export async function runSynth(flags: SynthFlags, print: Print = console.log): Promise<number> {
  const heading = `synth ${flags.preset} (${flags.experts} experts, seed ${flags.seed})`;
  if (flags.dryRun === true) {
    const tokenizer = tokenizerFacts(buildSyntheticTokenizerFiles().tokenizerJson);
    const plan = planCheckpoint(flags.preset, flags.experts, tokenizer);
    print(`${heading}, dry run: nothing is written`);
    for (const line of describePlan(plan, flags.list === true)) print(line);
    return 0;
  }
  if (flags.out === undefined) {
    throw new DramaError('SYNTH_NO_OUT', 'synth needs --out DIR (or --dry-run)', { param: 'out' });
  }
  const progress = createProgress(`writing ${flags.out}`, { unit: 'bytes' });
  const started = performance.now();
  // Ctrl-C stops between tensors so that the temporary folder is removed rather than left behind.
  const cancel = new AbortController();
  const onInterrupt = () => cancel.abort();
  process.once('SIGINT', onInterrupt);
  let cancelled = false;
  try {
    await synthesizeCheckpoint(flags.out, {
      preset: flags.preset,
      seed: flags.seed,
      experts: flags.experts,
      threads: flags.threads ?? defaultSynthThreads(),
      onProgress: (done, total) => progress.update(done, total),
      signal: cancel.signal,
    });
  } catch (error) {
    if (!isDramaError(error) || error.code !== 'SYNTH_CANCELLED') throw error;
    cancelled = true;
  } finally {
    process.off('SIGINT', onInterrupt);
    progress.stop();
  }
  if (cancelled) {
    print(`${heading}: cancelled, nothing written`);
    return 130;
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  print(`${heading}: wrote ${flags.out} in ${seconds} s`);
  print(`note: ${SYNTHETIC_WEIGHTS_NOTICE}`);
  return 0;
}

export function registerSynth(program: Command): void {
  program
    .command('synth')
    .description('Write a synthetic checkpoint: random weights in the real file format (speaks noise, not speech)')
    .addOption(
      new Option('--preset <name>', 'geometry')
        .choices(['tiny', 'small', 'full'])
        .env('DRAMA3_SYNTH_PRESET')
        .default('tiny'),
    )
    .addOption(
      new Option('--out <dir>', 'checkpoint folder to create (must be absent or empty)').env('DRAMA3_SYNTH_OUT'),
    )
    .addOption(
      new Option('--seed <n>', 'random seed (same seed, same bytes)')
        .argParser(parseSeed)
        .env('DRAMA3_SYNTH_SEED')
        .default(0),
    )
    .addOption(
      new Option('--experts <form>', 'routed expert storage')
        .choices(['fp8', 'bf16'])
        .env('DRAMA3_SYNTH_EXPERTS')
        .default('fp8'),
    )
    .addOption(
      new Option(
        '--threads <n>',
        `threads drawing tensors, the same bytes for any count (default: ${defaultSynthThreads()} here, the available cores up to 16)`,
      )
        .argParser(parseThreads)
        .env('DRAMA3_SYNTH_THREADS'),
    )
    .option('--dry-run', 'describe the tensors (count, bytes by dtype, parameters) without writing them')
    .option('--list', 'with --dry-run: also list every tensor')
    .action(async (flags: SynthFlags) => {
      process.exitCode = await runSynth(flags);
    });
}
