// Comparing two teacher-forced passes (speech-model-teacher.ts) of one prompt on two backends: the argmax pick of
// every column (a row's candidate logits, and its per-codebook heads where the next row is a code row) with both
// sides' margins, and the per-row cosine of every backbone layer's residual stream.
import type { TeacherForced } from './speech-model-teacher.ts';
import { ulpAt } from './ulps.ts';

export interface PickDifference {
  readonly row: number;
  /** 'main' (the candidate logits) or 'code k' (the head that draws code k). */
  readonly column: string;
  readonly pickA: number;
  readonly pickB: number;
  /** Top-1 minus top-2 logit, in bf16 ulps of the top-1 logit. */
  readonly marginA: number;
  readonly marginB: number;
}

export interface PickComparison {
  readonly columns: number;
  readonly equal: number;
  readonly differences: readonly PickDifference[];
}

/** The argmax of values[offset, offset + count) (ties to the lower index) and its margin in bf16 ulps. */
export function pickWithMargin(values: Float64Array, offset: number, count: number): { pick: number; margin: number } {
  let best = 0;
  let second = Number.NEGATIVE_INFINITY;
  for (let index = 1; index < count; index++) {
    const value = values[offset + index]!;
    if (value > values[offset + best]!) {
      second = values[offset + best]!;
      best = index;
    } else if (value > second) second = value;
  }
  const top = values[offset + best]!;
  return { pick: best, margin: (top - second) / ulpAt('bf16', Math.abs(top)) };
}

export function comparePicks(a: TeacherForced, b: TeacherForced): PickComparison {
  const differences: PickDifference[] = [];
  let columns = 0;
  const compare = (row: number, column: string, left: Float64Array, right: Float64Array, width: number) => {
    columns++;
    const x = pickWithMargin(left, row * width, width);
    const y = pickWithMargin(right, row * width, width);
    if (x.pick === y.pick) return;
    differences.push({ row, column, pickA: x.pick, pickB: y.pick, marginA: x.margin, marginB: y.margin });
  };
  for (let row = 0; row < a.rows; row++) {
    compare(row, 'main', a.candidateLogits, b.candidateLogits, a.candidates);
    if (!a.nextIsCode[row]) continue;
    a.headLogits.forEach((head, k) => {
      compare(row, `code ${k + 1}`, head, b.headLogits[k]!, a.codebookSize);
    });
  }
  return { columns, equal: columns - differences.length, differences };
}

export function describePickDifference(d: PickDifference, names: readonly [string, string]): string {
  const [first, second] = names;
  return (
    `row ${d.row} ${d.column}: ${first} picks ${d.pickA} (margin ${d.marginA.toFixed(1)} ulp), ` +
    `${second} picks ${d.pickB} (margin ${d.marginB.toFixed(1)} ulp)`
  );
}

export interface CosineException {
  readonly layer: number;
  readonly row: number;
  readonly cosine: number;
}

export interface ResidualComparison {
  /** Per layer, the smallest row cosine. */
  readonly worstByLayer: readonly number[];
  /** Every (layer, row) whose cosine is below the bound, in layer then row order. */
  readonly exceptions: readonly CosineException[];
}

function cosine(x: Float64Array, y: Float64Array, offset: number, count: number): number {
  let dot = 0;
  let xx = 0;
  let yy = 0;
  for (let index = offset; index < offset + count; index++) {
    dot += x[index]! * y[index]!;
    xx += x[index]! * x[index]!;
    yy += y[index]! * y[index]!;
  }
  if (xx === 0 && yy === 0) return 1;
  // A non-finite row gives NaN, which fails every bound.
  return dot / Math.sqrt(xx * yy);
}

export function compareResiduals(a: TeacherForced, b: TeacherForced, bound: number): ResidualComparison {
  const exceptions: CosineException[] = [];
  const worstByLayer = a.residuals.map((stream, layer) => {
    let worst = 1;
    for (let row = 0; row < a.rows; row++) {
      const value = cosine(stream, b.residuals[layer]!, row * a.hidden, a.hidden);
      if (!(value >= worst)) worst = value;
      if (!(value >= bound)) exceptions.push({ layer, row, cosine: value });
    }
    return worst;
  });
  return { worstByLayer, exceptions };
}

/** The first index where two arrays differ, as "at [i]: a vs b", or undefined when they are equal. */
export function firstElementDifference(a: ArrayLike<number>, b: ArrayLike<number>): string | undefined {
  const length = Math.max(a.length, b.length);
  for (let index = 0; index < length; index++) {
    if (Object.is(a[index], b[index])) continue;
    return `at [${index}]: ${a[index]} vs ${b[index]} (lengths ${a.length}, ${b.length})`;
  }
  return undefined;
}
