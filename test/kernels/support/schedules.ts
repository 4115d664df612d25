// The contract's bit-identity gates over launch schedules (contract.ts declares the cases):
//   invariance   each row's outputs alone and inside calls of more rows (1, 2, 7, 64, 257 by default) are the same
//                bytes as in the largest call
//   equivalence  every named schedule of the same work (whole vs chunks, a lane alone vs beside others) writes the
//                same bytes as the first
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import type { EquivalenceCase, InvarianceCase } from './contract.ts';
import { byteDifferences, elementBytes, execute, poisonedCount } from './execution.ts';
import type { Random } from './random.ts';

export const DEFAULT_ROW_COUNTS: readonly number[] = [1, 2, 7, 64, 257];

export interface ScheduleResult {
  readonly label: string;
  readonly identical: boolean;
  readonly unwritten: number;
  /** Where the bytes differ (first few), or what was left unwritten. */
  readonly details: readonly string[];
}

export function runInvariance(
  cuda: CudaContext,
  invariance: InvarianceCase,
  seed: number,
  kernel: KernelName | undefined,
): ScheduleResult {
  const counts = [...(invariance.rowCounts ?? DEFAULT_ROW_COUNTS)].sort((a, b) => a - b);
  const largest = counts[counts.length - 1]!;
  const run = (rows: number) => {
    const prepared = invariance.prepare(seed, rows);
    for (const spec of prepared.outputs) {
      const perRow = invariance.elementsPerRow[spec.name];
      if (perRow === undefined) throw new Error(`${invariance.label}: elementsPerRow names no size for ${spec.name}`);
      if (spec.count !== perRow * rows) {
        throw new Error(`${invariance.label}: ${spec.name} holds ${spec.count} elements, not ${rows} × ${perRow}`);
      }
    }
    const bytes = execute(cuda, prepared, kernel, 1)[0]!;
    return { outputs: prepared.outputs, bytes };
  };
  const base = run(largest);
  const details: string[] = [];
  let unwritten = 0;
  base.outputs.forEach((spec, index) => {
    unwritten += poisonedCount(spec.kind, base.bytes[index]!, spec.count);
  });
  let identical = true;
  for (const rows of counts.slice(0, -1)) {
    const other = run(rows);
    other.outputs.forEach((spec, index) => {
      unwritten += poisonedCount(spec.kind, other.bytes[index]!, spec.count);
      const length = spec.count * elementBytes(spec.kind);
      const same = Buffer.compare(other.bytes[index]!.subarray(0, length), base.bytes[index]!.subarray(0, length));
      if (same !== 0) identical = false;
    });
    const differences = byteDifferences(other.outputs, other.bytes, base.bytes, (spec) => spec.count);
    for (const line of differences) details.push(`${rows} rows vs ${largest}: ${line}`);
  }
  if (unwritten > 0) details.push(`${unwritten} output elements left unwritten`);
  return { label: `${invariance.label} over ${counts.join(', ')} rows`, identical, unwritten, details };
}

export function runEquivalence(
  cuda: CudaContext,
  equivalence: EquivalenceCase,
  random: Random,
  kernel: KernelName | undefined,
): ScheduleResult {
  const prepared = equivalence.prepare(random);
  const names = Object.keys(prepared.runs);
  if (names.length < 2) throw new Error(`${equivalence.label}: an equivalence needs two schedules or more`);
  const runs = names.map((name) => {
    const bytes = execute(
      cuda,
      { inputs: prepared.inputs, outputs: prepared.outputs, run: prepared.runs[name]! },
      kernel,
      1,
    );
    return bytes[0]!;
  });
  const details: string[] = [];
  let identical = true;
  let unwritten = 0;
  runs.forEach((bytes, runIndex) => {
    prepared.outputs.forEach((spec, index) => {
      unwritten += poisonedCount(spec.kind, bytes[index]!, spec.count);
      if (Buffer.compare(bytes[index]!, runs[0]![index]!) !== 0) identical = false;
    });
    if (runIndex === 0) return;
    const differences = byteDifferences(prepared.outputs, bytes, runs[0]!, (spec) => spec.count);
    for (const line of differences) details.push(`${names[runIndex]} vs ${names[0]}: ${line}`);
  });
  if (unwritten > 0) details.push(`${unwritten} output elements left unwritten`);
  return { label: `${equivalence.label}: ${names.join(' = ')}`, identical, unwritten, details };
}
