// `drama3 inspect DIR [--json]`: validates a checkpoint folder against the weight map. Prints a header (synthetic or
// not, backbone prefix, tensor counts by dtype, parameters), then every missing, mismatched and unused tensor by name;
// exit status 1 on any finding. The codec (codec.pth) and tokenizer are checked too.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Command, Option } from 'commander';
import { checkCheckpointFolder } from '../checkpoint/regular-file.ts';
import { SafetensorsCheckpoint } from '../checkpoint/safetensors-reader.ts';
import { readTorchCheckpoint } from '../checkpoint/torch-pth.ts';
import { CODEC_FILE_NAME } from '../codec/codec.ts';
import { loadCodecWeights } from '../codec/weights.ts';
import { DramaError, isDramaError } from '../errors.ts';
import { type LoadedConfig, loadConfig, syntheticWeightsNotice } from '../model/config.ts';
import { checkWeights, describeFindings, type WeightCheck } from '../model/weights-check.ts';

export interface InspectReport {
  readonly dir: string;
  readonly ok: boolean;
  readonly synthetic: boolean;
  readonly unknownConfigKeys: readonly string[];
  readonly defaultedConfigSections: readonly string[];
  readonly weights: WeightCheck;
  readonly codec: { readonly tensors: number; readonly problem: string | undefined };
  readonly tokenizer: { readonly size: number | undefined; readonly problem: string | undefined };
}

/** A file-system failure (EIO, EACCES...) reading the folder is a finding about the checkpoint, not a crash. */
function asRefusal(error: unknown, dir: string): DramaError | undefined {
  if (isDramaError(error)) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code !== 'string' || !/^E[A-Z]+$/.test(code)) return undefined;
  return new DramaError('CHECKPOINT_UNREADABLE', `${dir}: ${(error as Error).message}`, {
    kind: 'bad_checkpoint',
    param: dir,
    cause: error,
  });
}

async function checkCodec(dir: string, loaded: LoadedConfig): Promise<InspectReport['codec']> {
  const path = join(dir, CODEC_FILE_NAME);
  if (!existsSync(path)) return { tensors: 0, problem: `${CODEC_FILE_NAME} is missing` };
  try {
    const state = await readTorchCheckpoint(path);
    loadCodecWeights(state, loaded.config.codec, CODEC_FILE_NAME);
    return { tensors: state.size, problem: undefined };
  } catch (thrown) {
    const error = asRefusal(thrown, path);
    if (error === undefined) throw thrown;
    return { tensors: 0, problem: `${error.code}: ${error.message}` };
  }
}

async function checkTokenizer(dir: string, vocabSize: number): Promise<InspectReport['tokenizer']> {
  let parsed: { model?: { vocab?: Record<string, number> }; added_tokens?: { id: number }[] };
  try {
    parsed = JSON.parse(await readFile(join(dir, 'tokenizer.json'), 'utf8'));
  } catch (error) {
    return { size: undefined, problem: `tokenizer.json cannot be read: ${(error as Error).message}` };
  }
  let largest = -1;
  for (const id of Object.values(parsed.model?.vocab ?? {})) largest = Math.max(largest, id);
  for (const token of parsed.added_tokens ?? []) largest = Math.max(largest, token.id);
  const size = largest + 1;
  const problem = size > vocabSize ? `tokenizer.json has ${size} ids, more than vocab_size ${vocabSize}` : undefined;
  return { size, problem };
}

/** Runs every check on `dir`; throws only when the folder cannot be read as a checkpoint at all. */
async function inspectCheckpoint(dir: string): Promise<InspectReport> {
  await checkCheckpointFolder(dir);
  const loaded = await loadConfig(dir);
  const checkpoint = await SafetensorsCheckpoint.open(dir);
  let weights: WeightCheck;
  try {
    weights = checkWeights(loaded.config, checkpoint);
  } finally {
    await checkpoint.close();
  }
  const codec = await checkCodec(dir, loaded);
  const tokenizer = await checkTokenizer(dir, loaded.config.text.vocabSize);
  return {
    dir,
    ok: weights.ok && codec.problem === undefined && tokenizer.problem === undefined,
    synthetic: loaded.config.synthetic,
    unknownConfigKeys: loaded.unknownKeys,
    defaultedConfigSections: loaded.defaulted,
    weights,
    codec,
    tokenizer,
  };
}

/** The human form: header, then one line per finding, then OK or the number of findings. */
function formatReport(report: InspectReport): string[] {
  const { weights } = report;
  const counts = Object.entries(weights.countsByDtype)
    .map(([dtype, count]) => `${dtype} ${count}`)
    .join(', ');
  const tensorCount = Object.values(weights.countsByDtype).reduce((sum, count) => sum + count, 0);
  const notice = syntheticWeightsNotice(report);
  const lines = [
    `checkpoint ${report.dir}`,
    `  synthetic:  ${notice === undefined ? 'no' : `yes (${notice})`}`,
    `  prefix:     ${weights.prefix}`,
    `  experts:    ${weights.experts}`,
    `  tensors:    ${tensorCount} (${counts})`,
    `  parameters: ${weights.parameters} (${(weights.parameters / 1e9).toFixed(3)}e9)`,
    `  codec:      ${report.codec.tensors} tensors`,
    `  tokenizer:  ${report.tokenizer.size ?? '?'} ids`,
  ];
  if (report.unknownConfigKeys.length > 0) lines.push(`  config keys not used: ${report.unknownConfigKeys.join(', ')}`);
  if (report.defaultedConfigSections.length > 0) {
    lines.push(`  config sections absent, guessed: ${report.defaultedConfigSections.join(', ')}`);
  }
  const findings = [
    ...describeFindings(weights),
    ...(report.codec.problem === undefined ? [] : [`codec: ${report.codec.problem}`]),
    ...(report.tokenizer.problem === undefined ? [] : [`tokenizer: ${report.tokenizer.problem}`]),
  ];
  lines.push(...findings);
  lines.push(findings.length === 0 ? 'OK' : `FAILED: ${findings.length} finding(s)`);
  return lines;
}

/** The machine form: every field of the report, tensor specs reduced to name, dtype and shape. */
function reportToJson(report: InspectReport): Record<string, unknown> {
  const { weights } = report;
  return {
    ...report,
    weights: {
      prefix: weights.prefix,
      experts: weights.experts,
      countsByDtype: weights.countsByDtype,
      parameters: weights.parameters,
      missing: weights.missing.map((spec) => ({ name: spec.name, dtype: spec.dtype, shape: spec.shape })),
      mismatched: weights.mismatched,
      unused: weights.unused,
      problems: weights.problems,
    },
  };
}

/** Prints the report (or the refusal) and returns the exit status. */
export async function runInspect(dir: string, flags: { json?: boolean }, print = console.log): Promise<number> {
  try {
    const report = await inspectCheckpoint(dir);
    if (flags.json === true) print(JSON.stringify(reportToJson(report), null, 2));
    else for (const line of formatReport(report)) print(line);
    return report.ok ? 0 : 1;
  } catch (thrown) {
    const error = asRefusal(thrown, dir);
    if (error === undefined) throw thrown;
    const refusal = { code: error.code, message: error.message, param: error.param };
    print(
      flags.json === true
        ? JSON.stringify({ dir, ok: false, error: refusal }, null, 2)
        : `${error.code}: ${error.message}`,
    );
    return 1;
  }
}

export function registerInspect(program: Command): void {
  program
    .command('inspect')
    .description(
      'Check a checkpoint folder against the weight map: counts, then every missing/mismatched/unused tensor',
    )
    .argument('<dir>', 'checkpoint folder')
    .addOption(new Option('--json', 'print the report as JSON').env('DRAMA3_INSPECT_JSON'))
    .action(async (dir: string, flags: { json?: boolean }) => {
      process.exitCode = await runInspect(dir, flags);
    });
}
