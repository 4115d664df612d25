// Contract cases for the row-wise kernels: the RMSNorm family, embedding gather, the frame row and partial RoPE.
// Each shape set has one row, sizes that are not a multiple of any block or tile, and the real model's sizes.

import { codebookRow, embedRows, frameRow as frameRowReference } from '../../../src/backend/cpu/ops/embedding.ts';
import { applyRope, type RopeStyle } from '../../../src/backend/cpu/ops/rope.ts';
import { embeddingGather, frameRow } from '../../../src/backend/cuda/ops/embedding.ts';
import { addRmsNorm, gatedRmsNorm, rmsNorm } from '../../../src/backend/cuda/ops/rmsNorm.ts';
import { rope } from '../../../src/backend/cuda/ops/rope.ts';
import {
  gatedRmsNorm as gatedReference,
  rmsNorm as plainReference,
  rmsNormZeroCentred,
} from '../../../src/numeric/norms.ts';
import {
  BF16_ONE_ROUNDING_BOUND,
  type InvarianceCase,
  type KernelCase,
  type Prepared,
  type ShapeCase,
} from './contract.ts';
import { drawnOnce, plant, type Random, randomBf16, randomIntegers, streamOf } from './random.ts';

const EPS = 1e-6;

type NormVariant = 'zero-centred' | 'plain' | 'gated';

function normPrepared(
  variant: NormVariant,
  rows: number,
  cols: number,
  draw: (index: number) => Random,
  nonFinite: boolean,
): Prepared {
  const weight = variant === 'zero-centred' ? randomBf16(draw(0), cols, 0.1) : randomBf16(draw(0), cols, 0.2, 1);
  const x = randomBf16(draw(1), rows * cols, 2);
  const gate = randomBf16(draw(2), rows * cols, 2);
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
}

function normCase(name: string, variant: NormVariant, sizes: [string, number, number][], invarianceCols: number) {
  const shapes: ShapeCase[] = sizes.map(([label, rows, cols]) => ({
    label: `${label} [${rows}, ${cols}]`,
    prepare: (random: Random, nonFinite: boolean) => normPrepared(variant, rows, cols, () => random, nonFinite),
  }));
  const invariance: InvarianceCase[] = [
    {
      label: `rows of ${invarianceCols}`,
      prepare: (seed, rows) => normPrepared(variant, rows, invarianceCols, (index) => streamOf(seed, index), false),
      elementsPerRow: { out: invarianceCols },
    },
  ];
  return { name, bound: BF16_ONE_ROUNDING_BOUND, ulps: 1, shapes, invariance } satisfies KernelCase;
}

export const zeroCentredRmsNormCase = normCase(
  'rms_norm zero-centred',
  'zero-centred',
  [
    ['one row, hidden', 1, 2048],
    ['odd sizes', 37, 1000],
    ['prefill chunk, hidden', 64, 2048],
    ['q/k norm per head', 16 * 16, 256],
  ],
  2048,
);

export const plainRmsNormCase = normCase(
  'rms_norm plain',
  'plain',
  [
    ['one row, hidden', 1, 2048],
    ['odd sizes', 29, 333],
    ['prefill chunk, hidden', 64, 2048],
  ],
  333,
);

export const gatedRmsNormCase = normCase(
  'rms_norm gated (GDN output)',
  'gated',
  [
    ['one token, 32 value heads', 32, 128],
    ['odd sizes', 45, 100],
    ['prefill chunk, 32 value heads', 64 * 32, 128],
  ],
  128,
);

/** x + s rounded to bf16 (judged against the fp64 sum), and the norm judged from the device's own rounded sum. */
function addNormPrepared(rows: number, cols: number, draw: (index: number) => Random, nonFinite: boolean): Prepared {
  const weight = randomBf16(draw(0), cols, 0.1);
  const x = randomBf16(draw(1), rows * cols, 2);
  const source = randomBf16(draw(2), rows * cols, 2);
  if (nonFinite) {
    plant(x, 3 % cols, Number.NaN);
    plant(source, (rows - 1) * cols + (5 % cols), Number.POSITIVE_INFINITY);
  }
  return {
    inputs: { x, source, weight },
    outputs: [
      { name: 'sum', kind: 'bf16', count: rows * cols },
      { name: 'out', kind: 'bf16', count: rows * cols },
    ],
    reference(device) {
      const sum = new Float64Array(rows * cols);
      for (let i = 0; i < sum.length; i++) sum[i] = x.values[i]! + source.values[i]!;
      const out = new Float64Array(rows * cols);
      rmsNormZeroCentred(device.sum as Float64Array, weight.values, out, rows, cols, EPS);
      return { sum, out };
    },
    run(cuda, p, kernel) {
      cuda.driver.copyDeviceToDevice(p.sum!, p.x!, x.bits.byteLength, cuda.stream);
      addRmsNorm(
        cuda,
        { out: p.out!, x: p.sum!, source: p.source!, weight: p.weight!, rows, cols, eps: EPS },
        { kernel },
      );
    },
  };
}

export const addZeroCentredRmsNormCase: KernelCase = {
  name: 'residual add + rms_norm zero-centred',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    ['one row, hidden', 1, 2048],
    ['odd sizes', 37, 1000],
    ['prefill chunk, hidden', 64, 2048],
  ].map(([label, rows, cols]) => ({
    label: `${label} [${rows}, ${cols}]`,
    prepare: (random: Random, nonFinite: boolean) =>
      addNormPrepared(rows as number, cols as number, () => random, nonFinite),
  })),
  invariance: [
    {
      label: 'rows of 2048',
      prepare: (seed, rows) => addNormPrepared(rows, 2048, (index) => streamOf(seed, index), false),
      elementsPerRow: { sum: 2048, out: 2048 },
    },
  ],
};

function gatherShape(label: string, rows: number, cols: number, vocab: number): ShapeCase {
  return {
    label: `${label} [${rows} of ${vocab}, ${cols}]`,
    prepare: (random, nonFinite) => gatherPrepared(rows, cols, vocab, () => random, nonFinite),
  };
}

function gatherPrepared(
  rows: number,
  cols: number,
  vocab: number,
  draw: (index: number) => Random,
  nonFinite: boolean,
  seed?: number,
): Prepared {
  const drawTable = () => randomBf16(draw(0), vocab * cols, 1);
  // Invariance runs (a seed, nothing planted) draw the table once for every row count.
  const table = seed === undefined ? drawTable() : drawnOnce(`gather ${vocab}×${cols}`, seed, drawTable);
  const ids = randomIntegers(draw(1), rows, vocab);
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
}

export const embeddingGatherCase: KernelCase = {
  name: 'embedding gather',
  bound: 0,
  ulps: 0,
  shapes: [
    gatherShape('one row', 1, 2048, 5000),
    gatherShape('odd sizes', 37, 1001, 777),
    gatherShape('prefill chunk, hidden', 512, 2048, 8192),
  ],
  invariance: [
    {
      label: 'rows of 2048 from 5000',
      prepare: (seed, rows) => gatherPrepared(rows, 2048, 5000, (index) => streamOf(seed, index), false, seed),
      elementsPerRow: { out: 2048 },
    },
  ],
};

const CODEBOOKS = 10;
const CODE_TABLE_ROWS = codebookRow(CODEBOOKS - 1, 1024);

function frameRowShape(label: string, rows: number, cols: number, textVocab: number, codebook: number): ShapeCase {
  return {
    label: `${label} [${rows}, ${cols}], codebook ${codebook}`,
    prepare: (random, nonFinite) => frameRowPrepared(rows, cols, textVocab, codebook, () => random, nonFinite),
  };
}

function frameRowPrepared(
  rows: number,
  cols: number,
  textVocab: number,
  codebook: number,
  draw: (index: number) => Random,
  nonFinite: boolean,
  seed?: number,
): Prepared {
  const drawText = () => randomBf16(draw(0), textVocab * cols, 1);
  const drawCodes = () => randomBf16(draw(1), CODE_TABLE_ROWS * cols, 1);
  // Invariance runs (a seed, nothing planted) draw the tables once for every row count.
  const textTable = seed === undefined ? drawText() : drawnOnce(`text ${textVocab}×${cols}`, seed, drawText);
  const codeTable = seed === undefined ? drawCodes() : drawnOnce(`codes ×${cols}`, seed, drawCodes);
  const mainIds = randomIntegers(draw(2), rows, textVocab);
  const codes = randomIntegers(draw(3), rows * CODEBOOKS, 1024);
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
}

export const frameRowCase: KernelCase = {
  name: 'frame row (E_text[main] + E_cb[code]) / sqrt(2)',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    frameRowShape('one row', 1, 2048, 4000, 1),
    frameRowShape('odd sizes', 33, 999, 500, 0),
    frameRowShape('prefill chunk, hidden', 256, 2048, 8192, 1),
  ],
  invariance: [
    {
      label: 'rows of 2048, codebook 1',
      prepare: (seed, rows) => frameRowPrepared(rows, 2048, 4000, 1, (index) => streamOf(seed, index), false, seed),
      elementsPerRow: { out: 2048 },
    },
  ],
};

const ROTARY_DIMS = 64;

function ropeShape(label: string, rows: number, heads: number, headDim: number, style: RopeStyle): ShapeCase {
  return {
    label: `${label} [${rows}, ${heads}, ${headDim}], rotary ${ROTARY_DIMS}`,
    prepare: (random, nonFinite) => ropePrepared(rows, heads, headDim, style, () => random, nonFinite),
  };
}

function ropePrepared(
  rows: number,
  heads: number,
  headDim: number,
  style: RopeStyle,
  draw: (index: number) => Random,
  nonFinite: boolean,
): Prepared {
  const rotaryDims = ROTARY_DIMS;
  const theta = 1e7;
  const count = rows * heads * headDim;
  const x = randomBf16(draw(0), count, 1);
  const positions = randomIntegers(draw(1), rows, 262144);
  if (rows > 1) positions[1] = 0;
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
}

function ropeCase(style: RopeStyle): KernelCase {
  return {
    name: `rope ${style}`,
    bound: BF16_ONE_ROUNDING_BOUND,
    ulps: 1,
    shapes: [
      ropeShape('one row, 16 query heads', 1, 16, 256, style),
      ropeShape('odd rows, 2 kv heads', 37, 2, 256, style),
      ropeShape('prefill chunk, 16 query heads', 64, 16, 256, style),
    ],
    invariance: [
      {
        label: 'rows of 16 query heads',
        prepare: (seed, rows) => ropePrepared(rows, 16, 256, style, (index) => streamOf(seed, index), false),
        elementsPerRow: { out: 16 * 256 },
      },
    ],
  };
}

export const ropeNeoxCase = ropeCase('neox');
export const ropeInterleavedCase = ropeCase('interleaved');
