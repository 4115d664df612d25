// The parity verdicts of two teacher-forced passes: picks equal on at least PICK_AGREEMENT of the columns (every
// differing pick listed with both margins), and at least as often as a second valid bf16 implementation's picks (the
// cpu with fp32 linear sums: the floor that the rounding of sums alone sets), every row's residual stream at cosine ≥ RESIDUAL_COSINE after every
// backbone layer (every exception listed), and each pass's tower mirror writing Tower.run's own K/V bits.
import {
  comparePicks,
  compareResiduals,
  describePickDifference,
  firstElementDifference,
} from './speech-model-compare.ts';
import type { TeacherForced } from './speech-model-teacher.ts';

export const PICK_AGREEMENT = 0.99;
export const RESIDUAL_COSINE = 0.999;

/** What a verdict prints (`lines`) and why it fails (`failures`, empty when it passes). */
export interface Verdict {
  readonly lines: string[];
  readonly failures: string[];
}

export function pickVerdict(a: TeacherForced, b: TeacherForced, names: readonly [string, string]): Verdict {
  const comparison = comparePicks(a, b);
  const share = comparison.equal / comparison.columns;
  const lines = [
    `picks: ${comparison.equal} of ${comparison.columns} columns equal (${(100 * share).toFixed(2)}%, ` +
      `bound ${100 * PICK_AGREEMENT}%) over ${a.rows} rows`,
    ...comparison.differences.map((difference) => `  differs: ${describePickDifference(difference, names)}`),
  ];
  const failures = share >= PICK_AGREEMENT ? [] : [lines[0]!];
  return { lines, failures };
}

/**
 * The candidate's picks agree with the reference's at least as often as the floor's do: the floor is the reference's
 * own arithmetic with its linear layers' sums rounded to fp32 as a GPU's GEMM rounds them.
 */
export function pickFloorVerdict(candidate: TeacherForced, reference: TeacherForced, floor: TeacherForced): Verdict {
  const measured = comparePicks(candidate, reference);
  const floored = comparePicks(floor, reference);
  const share = measured.equal / measured.columns;
  const floorShare = floored.equal / floored.columns;
  const widest = floored.differences.reduce((most, d) => Math.max(most, d.marginA, d.marginB), 0);
  const lines = [
    `picks against the floor: ${measured.equal} of ${measured.columns} columns equal (${(100 * share).toFixed(2)}%); ` +
      `the reference's own arithmetic with fp32 linear sums: ${floored.equal} of ${floored.columns} ` +
      `(${(100 * floorShare).toFixed(2)}%, its differing picks' margins at most ${widest.toFixed(1)} ulp)`,
  ];
  return { lines, failures: share >= floorShare ? [] : [lines[0]!] };
}

export function residualVerdict(a: TeacherForced, b: TeacherForced): Verdict {
  const { worstByLayer, exceptions } = compareResiduals(a, b, RESIDUAL_COSINE);
  const lines = [
    `residual cosine per layer, worst row: ${worstByLayer.map((value, layer) => `${layer}: ${value.toFixed(6)}`).join(', ')}`,
    `${exceptions.length} (layer, row) pairs below cosine ${RESIDUAL_COSINE}`,
    ...exceptions.map(
      (exception) => `  below: layer ${exception.layer} row ${exception.row} cosine ${exception.cosine}`,
    ),
  ];
  return { lines, failures: exceptions.length === 0 ? [] : [lines[1]!] };
}

/** The mirror of Tower.run in teacherForce must write the same K/V bits as Tower.run on the same backend. */
export function mirrorVerdict(pass: TeacherForced, name: string): Verdict {
  const failures: string[] = [];
  if (pass.towerRunKeyValues.length !== pass.towerKeyValues.length) failures.push(`${name}: Tower.run was not run`);
  pass.towerKeyValues.forEach((mirror, layer) => {
    const difference = firstElementDifference(mirror, pass.towerRunKeyValues[layer]!);
    if (difference !== undefined) failures.push(`${name} tower layer ${layer} K/V: mirror vs Tower.run ${difference}`);
  });
  return {
    lines: failures.length === 0 ? [`${name}: the tower mirror writes Tower.run's K/V bits`] : failures,
    failures,
  };
}
