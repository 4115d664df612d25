// The cpu backend's tower input: the code gather (−1 masked to a zero row), a zero-centred norm of each half and the
// concatenation that Tower.run ran before as four ops, with those ops' bits in every precision; and, in fp64, each
// half the norm of its own row with its own weight.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CpuBackend } from '../../../src/backend/cpu/backend.ts';
import { roundToBf16 } from '../../../src/numeric/dtypes.ts';
import type { FloatArray } from '../../../src/numeric/float-array.ts';

const ROWS = 5;
const CODE_COLS = 12;
const INPUT_COLS = 20;
const WIDTH = 4;
const CODEBOOK = 1;
const FIRST_ROW = 3;
const EPS = 1e-6;

function values(count: number, seed: number, scale = 1): Float32Array {
  let state = seed;
  return Float32Array.from({ length: count }, () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return roundToBf16(scale * (state / 2 ** 31 - 1));
  });
}

/** Rows 1 and 3 masked (code −1 at the codebook's column); the others read rows FIRST_ROW + code. */
const RECORDS = Int32Array.from([7, 0, 2, 1, 7, -1, -1, -1, 7, 3, 0, 2, 7, -1, -1, -1, 7, 1, 4, 0]);

function setUp(precision: 'bf16' | 'fp32' | 'fp64') {
  const backend = new CpuBackend({ precision });
  const tensor = (shape: number[], data: Float32Array) => backend.fromHost('f32', shape, data);
  return {
    backend,
    codeTable: tensor([FIRST_ROW + 5, CODE_COLS], values((FIRST_ROW + 5) * CODE_COLS, 1)),
    codeNorm: tensor([CODE_COLS], values(CODE_COLS, 2, 0.1)),
    inputNorm: tensor([INPUT_COLS], values(INPUT_COLS, 3, 0.1)),
    records: backend.fromHost('i32', [ROWS, WIDTH], RECORDS),
    input: backend.allocate('bf16', [ROWS, INPUT_COLS]).data as FloatArray,
  };
}

for (const precision of ['bf16', 'fp32', 'fp64'] as const) {
  test(`${precision}: the tower input has the bits of the gather, the two norms and the concatenation`, () => {
    const { backend, codeTable, codeNorm, inputNorm, records, input } = setUp(precision);
    input.set(values(ROWS * INPUT_COLS, 4, 3));
    const width = CODE_COLS + INPUT_COLS;
    const fused = backend.allocate('bf16', [ROWS, width]).data;
    const a = {
      codeTable,
      records,
      codebook: CODEBOOK,
      codeFirstRow: FIRST_ROW,
      codeNorm,
      input,
      inputCols: INPUT_COLS,
    };
    backend.towerInput({ ...a, inputNorm, eps: EPS }, fused, ROWS);

    const embedded = backend.allocate('bf16', [ROWS, CODE_COLS]).data;
    const normedCode = backend.allocate('bf16', [ROWS, CODE_COLS]).data;
    const normedInput = backend.allocate('bf16', [ROWS, INPUT_COLS]).data;
    const separate = backend.allocate('bf16', [ROWS, width]).data;
    backend.gatherCodes(codeTable, records, CODEBOOK, FIRST_ROW, embedded, ROWS);
    backend.zeroCentredRmsNorm(embedded, codeNorm, normedCode, ROWS, CODE_COLS, EPS);
    backend.zeroCentredRmsNorm(input, inputNorm, normedInput, ROWS, INPUT_COLS, EPS);
    backend.concatenateColumns(normedCode, CODE_COLS, normedInput, INPUT_COLS, separate, ROWS);
    assert.deepEqual(Array.from(fused), Array.from(separate));
  });
}

test('fp64: each half is its own row normed with its own weight, a masked code row normed from zeros', () => {
  const { backend, codeTable, codeNorm, inputNorm, records, input } = setUp('fp64');
  input.set(values(ROWS * INPUT_COLS, 4, 3));
  const width = CODE_COLS + INPUT_COLS;
  const out = backend.allocate('bf16', [ROWS, width]).data;
  const a = { codeTable, records, codebook: CODEBOOK, codeFirstRow: FIRST_ROW, codeNorm, input, inputCols: INPUT_COLS };
  backend.towerInput({ ...a, inputNorm, eps: EPS }, out, ROWS);
  const norm = (row: ArrayLike<number>, weight: ArrayLike<number>, cols: number) => {
    let squares = 0;
    for (let c = 0; c < cols; c++) squares += row[c]! ** 2;
    const scale = 1 / Math.sqrt(squares / cols + EPS);
    return Array.from({ length: cols }, (_, c) => row[c]! * scale * (1 + weight[c]!));
  };
  const table = codeTable.data as Float32Array;
  for (let t = 0; t < ROWS; t++) {
    const code = RECORDS[t * WIDTH + 1 + CODEBOOK]!;
    const codeRow = code < 0 ? new Float32Array(CODE_COLS) : table.subarray((FIRST_ROW + code) * CODE_COLS);
    const expected = [
      ...norm(codeRow, codeNorm.data as Float32Array, CODE_COLS),
      ...norm(input.subarray(t * INPUT_COLS), inputNorm.data as Float32Array, INPUT_COLS),
    ];
    Array.from(out.subarray(t * width, (t + 1) * width)).forEach((value, c) => {
      assert.ok(Math.abs(value - expected[c]!) <= 1e-12 * (1 + Math.abs(expected[c]!)), `row ${t} column ${c}`);
    });
  }
});
