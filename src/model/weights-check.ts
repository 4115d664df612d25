// Validates a checkpoint's tensor table against the weight map: every missing, mismatched (dtype or shape, with both
// values) and unused tensor by name. `inspect` prints the result; the loader refuses a checkpoint that fails it.
import type { DType } from '../checkpoint/tensor.ts';
import { DramaError } from '../errors.ts';
import type { Drama3Config } from './config.ts';
import {
  detectBackbonePrefix,
  detectExpertFormat,
  type ExpertFormat,
  expectedTensors,
  type TensorSpec,
} from './weights.ts';

export interface TensorInfo {
  readonly dtype: DType;
  readonly shape: readonly number[];
}

/** What the check needs from an open checkpoint (SafetensorsCheckpoint has it). */
export interface TensorTable {
  /** Every tensor's dtype and shape by name, shared rather than copied; the check only reads it. */
  infos(): ReadonlyMap<string, TensorInfo>;
}

export interface TensorMismatch {
  readonly name: string;
  readonly expected: { readonly dtypes: readonly DType[]; readonly shape: readonly number[] };
  readonly actual: TensorInfo;
}

export interface WeightCheck {
  readonly prefix: string;
  readonly experts: ExpertFormat;
  /** Tensors in the checkpoint by dtype. */
  readonly countsByDtype: Readonly<Record<string, number>>;
  /** Elements over every tensor in the checkpoint except FP8 block scales. */
  readonly parameters: number;
  readonly missing: readonly TensorSpec[];
  readonly mismatched: readonly TensorMismatch[];
  readonly unused: readonly string[];
  /** Disagreements between config.json and the tensors that no single name shows. */
  readonly problems: readonly string[];
  readonly ok: boolean;
  /** The weight map the tensors were checked against (for the prefix and expert format found). */
  readonly specs: readonly TensorSpec[];
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

export function checkWeights(config: Drama3Config, table: TensorTable): WeightCheck {
  const infos = table.infos();
  const prefix = detectBackbonePrefix(infos);
  const experts = detectExpertFormat(infos, prefix);
  const problems: string[] = [];
  if (config.quantization !== undefined && experts !== 'fp8') {
    problems.push(`config.json has quantization_config (fp8) but the experts are stored as ${experts}`);
  }
  if (config.quantization === undefined && experts === 'fp8') {
    problems.push('the experts are stored as FP8 blocks but config.json has no quantization_config');
  }
  const specs = expectedTensors(config, { prefix, experts });
  const expectedNames = new Set<string>();
  const missing: TensorSpec[] = [];
  const mismatched: TensorMismatch[] = [];
  for (const spec of specs) {
    expectedNames.add(spec.name);
    const actual = infos.get(spec.name);
    if (actual === undefined) {
      missing.push(spec);
      continue;
    }
    if (!spec.accepts.includes(actual.dtype) || !sameShape(spec.shape, actual.shape)) {
      // A copy: the report must not hold the table's own shape.
      const found = { dtype: actual.dtype, shape: [...actual.shape] };
      mismatched.push({ name: spec.name, expected: { dtypes: spec.accepts, shape: spec.shape }, actual: found });
    }
  }
  const countsByDtype: Record<string, number> = {};
  let parameters = 0;
  for (const [name, info] of infos) {
    countsByDtype[info.dtype] = (countsByDtype[info.dtype] ?? 0) + 1;
    if (!name.endsWith('_scale_inv')) parameters += info.shape.reduce((product, size) => product * size, 1);
  }
  const unused = [...infos.keys()].filter((name) => !expectedNames.has(name));
  const ok = missing.length === 0 && mismatched.length === 0 && unused.length === 0 && problems.length === 0;
  return { prefix, experts, countsByDtype, parameters, missing, mismatched, unused, problems, ok, specs };
}

const describeShape = (shape: readonly number[]) => `[${shape.join(', ')}]`;

/** One line per finding, in a stable order: problems, missing, mismatched, unused. */
export function describeFindings(check: WeightCheck): string[] {
  return [
    ...check.problems,
    ...check.missing.map((spec) => `missing ${spec.name}: expected ${spec.dtype} ${describeShape(spec.shape)}`),
    ...check.mismatched.map(
      (item) =>
        `mismatched ${item.name}: expected ${item.expected.dtypes.join('|')} ${describeShape(item.expected.shape)}, ` +
        `found ${item.actual.dtype} ${describeShape(item.actual.shape)}`,
    ),
    ...check.unused.map((name) => `unused ${name}`),
  ];
}

/** Throws WEIGHTS_MISMATCH naming the first findings when the check failed. */
export function assertWeightsMatch(check: WeightCheck, source: string): void {
  if (check.ok) return;
  const findings = describeFindings(check);
  const shown = findings.slice(0, 8).join('; ');
  const more = findings.length > 8 ? ` (and ${findings.length - 8} more; run drama3 inspect)` : '';
  throw new DramaError('WEIGHTS_MISMATCH', `${source} does not match the model config: ${shown}${more}`, {
    kind: 'bad_checkpoint',
  });
}
