// Contract case for the tower input (kernels/cuda/rms_norm.cu, tower_input_*): each row's code gathered from the
// records (−1 masked to a zero row) and zero-centred normed into the left columns, its input row normed into the
// right, against the fp64 norms of the two halves; and byte for byte against the four launches it replaces (the code
// gather, a norm of each half, the concatenation), where the halves' widths give their norms different thread counts.
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import { concatenateColumns, gatherCodes } from '../../../src/backend/cuda/ops/records.ts';
import { rmsNorm, towerInput } from '../../../src/backend/cuda/ops/rmsNorm.ts';
import { rmsNormZeroCentred } from '../../../src/numeric/norms.ts';
import {
  BF16_ONE_ROUNDING_BOUND,
  type EquivalenceCase,
  type HostInput,
  type InvarianceCase,
  type KernelCase,
  type Prepared,
  type ShapeCase,
} from './contract.ts';
import { type Bf16Tensor, bf16FromValues, drawnOnce, plant, type Random, randomBf16, streamOf } from './random.ts';

const EPS = 1e-6;
const WIDTH = 11;
const CODEBOOK = 3;
// A codebook's rows start past other codebooks' rows (fewer than the model's, to keep the table small).
const CODE_FIRST_ROW = 1000;
const CODE_ROWS = CODE_FIRST_ROW + 1024;

interface Geometry {
  readonly rows: number;
  readonly codeCols: number;
  readonly inputCols: number;
}

/** Records of `rows` rows drawn in order: about a third masked (every code −1, a text row), codes below 1024. */
function drawRecords(random: Random, rows: number): Int32Array {
  const out = new Int32Array(rows * WIDTH);
  for (let t = 0; t < rows; t++) {
    const masked = random.next() < 0.33;
    out[t * WIDTH] = random.integer(100);
    for (let k = 0; k < WIDTH - 1; k++) out[t * WIDTH + 1 + k] = masked ? -1 : random.integer(1024);
  }
  return out;
}

interface TowerInputs {
  readonly codeTable: Bf16Tensor;
  readonly codeWeight: Bf16Tensor;
  readonly inputWeight: Bf16Tensor;
  readonly records: Int32Array;
  readonly input: Bf16Tensor;
}

function drawInputs(
  g: Geometry,
  draw: (index: number) => Random,
  once: (key: string, make: () => Bf16Tensor) => Bf16Tensor,
) {
  return {
    codeTable: once(`tower input table ${g.codeCols}`, () => randomBf16(draw(0), CODE_ROWS * g.codeCols, 1)),
    codeWeight: once(`tower input enorm ${g.codeCols}`, () => randomBf16(draw(1), g.codeCols, 0.1)),
    inputWeight: once(`tower input hnorm ${g.inputCols}`, () => randomBf16(draw(2), g.inputCols, 0.1)),
    records: drawRecords(draw(3), g.rows),
    input: randomBf16(draw(4), g.rows * g.inputCols, 2),
  } satisfies TowerInputs;
}

/** Every input drawn in turn from one stream (the shapes and equivalences; invariance shares its tables). */
function drawFresh(g: Geometry, random: Random) {
  return drawInputs(
    g,
    () => random,
    (_key, make) => make(),
  );
}

function referenceOut(g: Geometry, x: TowerInputs): Float64Array {
  const { rows, codeCols, inputCols } = g;
  const code = new Float64Array(rows * codeCols);
  for (let t = 0; t < rows; t++) {
    const value = x.records[t * WIDTH + 1 + CODEBOOK]!;
    if (value < 0) continue;
    const first = (CODE_FIRST_ROW + value) * codeCols;
    code.set(x.codeTable.values.subarray(first, first + codeCols), t * codeCols);
  }
  const normedCode = new Float64Array(rows * codeCols);
  const normedInput = new Float64Array(rows * inputCols);
  rmsNormZeroCentred(code, x.codeWeight.values, normedCode, rows, codeCols, EPS);
  rmsNormZeroCentred(x.input.values, x.inputWeight.values, normedInput, rows, inputCols, EPS);
  const out = new Float64Array(rows * (codeCols + inputCols));
  for (let t = 0; t < rows; t++) {
    out.set(normedCode.subarray(t * codeCols, (t + 1) * codeCols), t * (codeCols + inputCols));
    out.set(normedInput.subarray(t * inputCols, (t + 1) * inputCols), t * (codeCols + inputCols) + codeCols);
  }
  return out;
}

function hostInputs(x: TowerInputs): Record<string, HostInput> {
  return { ...x };
}

function fusedRun(g: Geometry) {
  return (cuda: CudaContext, p: Readonly<Record<string, bigint>>, kernel: KernelName | undefined) => {
    towerInput(
      cuda,
      {
        out: p.out!,
        codeTable: p.codeTable!,
        codeRows: CODE_ROWS,
        codeCols: g.codeCols,
        records: p.records!,
        width: WIDTH,
        codebook: CODEBOOK,
        codeFirstRow: CODE_FIRST_ROW,
        codeWeight: p.codeWeight!,
        input: p.input!,
        inputCols: g.inputCols,
        inputWeight: p.inputWeight!,
        rows: g.rows,
        eps: EPS,
      },
      { kernel },
    );
  };
}

/** The launches the tower ran before: gather, a norm of each half, the concatenation (scratch among the inputs). */
function separateRun(g: Geometry) {
  return (cuda: CudaContext, p: Readonly<Record<string, bigint>>) => {
    const { rows, codeCols, inputCols } = g;
    const table = { codeTable: p.codeTable!, codeRows: CODE_ROWS, records: p.records!, width: WIDTH };
    gatherCodes(cuda, {
      ...table,
      out: p.embedded!,
      codebook: CODEBOOK,
      codeFirstRow: CODE_FIRST_ROW,
      rows,
      cols: codeCols,
    });
    const norm = { rows, eps: EPS, zeroCentred: true };
    rmsNorm(cuda, { ...norm, out: p.normedCode!, x: p.embedded!, weight: p.codeWeight!, cols: codeCols });
    rmsNorm(cuda, { ...norm, out: p.normedInput!, x: p.input!, weight: p.inputWeight!, cols: inputCols });
    concatenateColumns(cuda, {
      out: p.out!,
      a: p.normedCode!,
      aCols: codeCols,
      b: p.normedInput!,
      bCols: inputCols,
      rows,
    });
  };
}

function outputs(g: Geometry) {
  return [{ name: 'out', kind: 'bf16' as const, count: g.rows * (g.codeCols + g.inputCols) }];
}

function label(g: Geometry): string {
  return `[${g.rows}, ${g.codeCols} | ${g.inputCols}]`;
}

function shape(name: string, g: Geometry): ShapeCase {
  return {
    label: `${name} ${label(g)}`,
    prepare(random: Random, nonFinite: boolean): Prepared {
      const x = drawFresh(g, random);
      if (nonFinite) {
        const unmasked = Array.from({ length: g.rows }, (_, t) => t).find(
          (t) => x.records[t * WIDTH + 1 + CODEBOOK]! >= 0,
        );
        if (unmasked !== undefined) {
          const code = x.records[unmasked * WIDTH + 1 + CODEBOOK]!;
          plant(x.codeTable, (CODE_FIRST_ROW + code) * g.codeCols + 1, Number.NaN);
        }
        plant(x.input, (g.rows - 1) * g.inputCols + 2, Number.POSITIVE_INFINITY);
        plant(x.input, 5 % g.inputCols, Number.NaN);
      }
      return {
        inputs: hostInputs(x),
        outputs: outputs(g),
        reference: () => ({ out: referenceOut(g, x) }),
        run: fusedRun(g),
      };
    },
  };
}

function againstSeparate(g: Geometry): EquivalenceCase {
  return {
    label: `one launch against gather, two norms and the concatenation ${label(g)}`,
    prepare(random: Random) {
      const x = drawFresh(g, random);
      const zeros = (count: number) => bf16FromValues(new Float64Array(count));
      return {
        inputs: {
          ...hostInputs(x),
          embedded: zeros(g.rows * g.codeCols),
          normedCode: zeros(g.rows * g.codeCols),
          normedInput: zeros(g.rows * g.inputCols),
        },
        outputs: outputs(g),
        runs: { separate: separateRun(g), 'one launch': fusedRun(g) },
      };
    },
  };
}

function invariance(codeCols: number, inputCols: number): InvarianceCase {
  return {
    label: `rows of ${codeCols} | ${inputCols}`,
    prepare(seed: number, rows: number): Prepared {
      const g = { rows, codeCols, inputCols };
      const x = drawInputs(
        g,
        (index) => streamOf(seed, index),
        (key, make) => drawnOnce(key, seed, make),
      );
      return { inputs: hostInputs(x), outputs: outputs(g), reference: () => ({}), run: fusedRun(g) };
    },
    elementsPerRow: { out: codeCols + inputCols },
  };
}

// Input halves at least as wide as the code half come first: the control norms the code half with the input's weight.
export const towerInputCase: KernelCase = {
  name: 'tower input (code gather, two zero-centred norms, one launch)',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    shape('one row, tower', { rows: 1, codeCols: 2048, inputCols: 2048 }),
    shape('odd sizes, wider input', { rows: 37, codeCols: 1000, inputCols: 1234 }),
    shape('prefill chunk, tower', { rows: 64, codeCols: 2048, inputCols: 2048 }),
    shape('odd sizes, wider code', { rows: 7, codeCols: 1500, inputCols: 1000 }),
  ],
  invariance: [invariance(2048, 2048), invariance(1000, 1234)],
  equivalences: [
    againstSeparate({ rows: 1, codeCols: 2048, inputCols: 2048 }),
    againstSeparate({ rows: 37, codeCols: 1000, inputCols: 1234 }),
    againstSeparate({ rows: 7, codeCols: 1500, inputCols: 1000 }),
    againstSeparate({ rows: 257, codeCols: 2048, inputCols: 2048 }),
  ],
};
