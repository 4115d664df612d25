// Contract cases for the row-wise kernels: the RMSNorm family, embedding gather, the frame row and partial RoPE.
// Each shape set has one row, sizes that are not a multiple of any block or tile, and the real model's sizes.

import { codebookRow, embedRows, frameRow as frameRowReference } from '../../../src/backend/cpu/ops/embedding.ts';
import { applyRope, type RopeStyle } from '../../../src/backend/cpu/ops/rope.ts';
import { embeddingGather, frameRow } from '../../../src/backend/cuda/ops/embedding.ts';
import { gatedRmsNorm, rmsNorm } from '../../../src/backend/cuda/ops/rmsNorm.ts';
import { rope } from '../../../src/backend/cuda/ops/rope.ts';
import {
  gatedRmsNorm as gatedReference,
  rmsNorm as plainReference,
  rmsNormZeroCentred,
} from '../../../src/numeric/norms.ts';
import { BF16_ONE_ROUNDING_BOUND, type KernelCase, type Prepared, type ShapeCase } from './contract.ts';
import { plant, type Random, randomBf16, randomIntegers } from './random.ts';

const EPS = 1e-6;

function normCase(name: string, variant: 'zero-centred' | 'plain' | 'gated', sizes: [string, number, number][]) {
  const shapes: ShapeCase[] = sizes.map(([label, rows, cols]) => ({
    label: `${label} [${rows}, ${cols}]`,
    prepare(random: Random, nonFinite: boolean): Prepared {
      const x = randomBf16(random, rows * cols, 2);
      const weight = variant === 'zero-centred' ? randomBf16(random, cols, 0.1) : randomBf16(random, cols, 0.2, 1);
      const gate = randomBf16(random, rows * cols, 2);
      if (nonFinite) {
        plant(x, 3 % cols, Number.NaN);
        plant(x, (rows - 1) * cols + (5 % cols), Number.POSITIVE_INFINITY);
        plant(gate, rows * cols - 1, Number.NEGATIVE_INFINITY);
      }
      return {
        inputs: variant === 'gated' ? { x, weight, gate } : { x, weight },
        outputs: [{ name: 'out', kind: 'bf16', count: rows * cols }],
        reference() {
          const out = new Float64Array(rows * cols);
          if (variant === 'zero-centred') rmsNormZeroCentred(x.values, weight.values, out, rows, cols, EPS);
          else if (variant === 'plain') plainReference(x.values, weight.values, out, rows, cols, EPS);
          else gatedReference(x.values, gate.values, weight.values, out, rows, cols, EPS);
          return { out };
        },
        run(cuda, p, kernel) {
          const common = { out: p.out!, x: p.x!, weight: p.weight!, rows, cols, eps: EPS };
          if (variant === 'gated') gatedRmsNorm(cuda, { ...common, gate: p.gate! }, { kernel });
          else rmsNorm(cuda, { ...common, zeroCentred: variant === 'zero-centred' }, { kernel });
        },
      };
    },
  }));
  return { name, bound: BF16_ONE_ROUNDING_BOUND, shapes } satisfies KernelCase;
}

export const zeroCentredRmsNormCase = normCase('rms_norm zero-centred', 'zero-centred', [
  ['one row, hidden', 1, 2048],
  ['odd sizes', 37, 1000],
  ['prefill chunk, hidden', 64, 2048],
  ['q/k norm per head', 16 * 16, 256],
]);

export const plainRmsNormCase = normCase('rms_norm plain', 'plain', [
  ['one row, hidden', 1, 2048],
  ['odd sizes', 29, 333],
  ['prefill chunk, hidden', 64, 2048],
]);

export const gatedRmsNormCase = normCase('rms_norm gated (GDN output)', 'gated', [
  ['one token, 32 value heads', 32, 128],
  ['odd sizes', 45, 100],
  ['prefill chunk, 32 value heads', 64 * 32, 128],
]);

function gatherShape(label: string, rows: number, cols: number, vocab: number): ShapeCase {
  return {
    label: `${label} [${rows} of ${vocab}, ${cols}]`,
    prepare(random, nonFinite) {
      const table = randomBf16(random, vocab * cols, 1);
      const ids = randomIntegers(random, rows, vocab);
      if (nonFinite) {
        plant(table, ids[0]! * cols + 1, Number.NaN);
        plant(table, ids[rows - 1]! * cols + 2, Number.POSITIVE_INFINITY);
        plant(table, ids[rows - 1]! * cols, Number.NEGATIVE_INFINITY);
      }
      return {
        inputs: { table, ids },
        outputs: [{ name: 'out', kind: 'bf16', count: rows * cols }],
        reference() {
          const out = new Float64Array(rows * cols);
          embedRows(table.values, ids, out, rows, cols);
          return { out };
        },
        run(cuda, p, kernel) {
          embeddingGather(cuda, { out: p.out!, table: p.table!, ids: p.ids!, rows, cols, vocab }, { kernel });
        },
      };
    },
  };
}

export const embeddingGatherCase: KernelCase = {
  name: 'embedding gather',
  bound: 0,
  shapes: [
    gatherShape('one row', 1, 2048, 5000),
    gatherShape('odd sizes', 37, 1001, 777),
    gatherShape('prefill chunk, hidden', 512, 2048, 8192),
  ],
};

const CODEBOOKS = 10;
const CODE_TABLE_ROWS = codebookRow(CODEBOOKS - 1, 1024);

function frameRowShape(label: string, rows: number, cols: number, textVocab: number, codebook: number): ShapeCase {
  return {
    label: `${label} [${rows}, ${cols}], codebook ${codebook}`,
    prepare(random, nonFinite) {
      const textTable = randomBf16(random, textVocab * cols, 1);
      const codeTable = randomBf16(random, CODE_TABLE_ROWS * cols, 1);
      const mainIds = randomIntegers(random, rows, textVocab);
      const codes = randomIntegers(random, rows * CODEBOOKS, 1024);
      const codeRow = (row: number) => codebookRow(codebook, codes[row * CODEBOOKS + codebook]!);
      if (nonFinite) {
        plant(textTable, mainIds[0]! * cols, Number.NaN);
        plant(codeTable, codeRow(rows - 1) * cols + 1, Number.POSITIVE_INFINITY);
        plant(codeTable, codeRow(rows - 1) * cols + 2, Number.NEGATIVE_INFINITY);
      }
      const codeRowOffset = codebookRow(codebook, 0);
      return {
        inputs: { textTable, codeTable, mainIds, codes },
        outputs: [{ name: 'out', kind: 'bf16', count: rows * cols }],
        reference() {
          const out = new Float64Array(rows * cols);
          for (let row = 0; row < rows; row++) {
            frameRowReference(textTable.values, codeTable.values, mainIds[row]!, codeRow(row), out, row * cols, cols);
          }
          return { out };
        },
        run(cuda, p, kernel) {
          const codes = p.codes! + BigInt(codebook * 4);
          const a = { out: p.out!, textTable: p.textTable!, codeTable: p.codeTable!, mainIds: p.mainIds!, codes };
          const sizes = { rows, cols, textVocab, codeTableRows: CODE_TABLE_ROWS, codeStride: CODEBOOKS, codeRowOffset };
          frameRow(cuda, { ...a, ...sizes }, { kernel });
        },
      };
    },
  };
}

export const frameRowCase: KernelCase = {
  name: 'frame row (E_text[main] + E_cb[code]) / sqrt(2)',
  bound: BF16_ONE_ROUNDING_BOUND,
  shapes: [
    frameRowShape('one row', 1, 2048, 4000, 1),
    frameRowShape('odd sizes', 33, 999, 500, 0),
    frameRowShape('prefill chunk, hidden', 256, 2048, 8192, 1),
  ],
};

function ropeShape(label: string, rows: number, heads: number, headDim: number, style: RopeStyle): ShapeCase {
  const rotaryDims = 64;
  const theta = 1e7;
  return {
    label: `${label} [${rows}, ${heads}, ${headDim}], rotary ${rotaryDims}`,
    prepare(random, nonFinite) {
      const count = rows * heads * headDim;
      const x = randomBf16(random, count, 1);
      const positions = randomIntegers(random, rows, 262144);
      positions[0] = rows > 1 ? 0 : positions[0]!;
      if (nonFinite) {
        plant(x, 1, Number.NaN);
        plant(x, count - headDim + 3, Number.POSITIVE_INFINITY);
        plant(x, count - 1, Number.NEGATIVE_INFINITY);
      }
      return {
        inputs: { x, positions },
        outputs: [{ name: 'out', kind: 'bf16', count }],
        reference() {
          const out = Float64Array.from(x.values);
          applyRope(out, rows, heads, headDim, rotaryDims, positions, theta, style);
          return { out };
        },
        run(cuda, p, kernel) {
          const a = { out: p.out!, x: p.x!, positions: p.positions!, rows, heads, headDim, rotaryDims, theta, style };
          rope(cuda, a, { kernel });
        },
      };
    },
  };
}

function ropeCase(style: RopeStyle): KernelCase {
  return {
    name: `rope ${style}`,
    bound: BF16_ONE_ROUNDING_BOUND,
    shapes: [
      ropeShape('one row, 16 query heads', 1, 16, 256, style),
      ropeShape('odd rows, 2 kv heads', 37, 2, 256, style),
      ropeShape('prefill chunk, 16 query heads', 64, 16, 256, style),
    ],
  };
}

export const ropeNeoxCase = ropeCase('neox');
export const ropeInterleavedCase = ropeCase('interleaved');
