// Contract cases for kernels/cuda/records.cu: frame-record embeddings and code gathers (against the cpu frame-row
// formula), lane-slot record moves (exact), the residual add and column concatenation.
import { frameRow } from '../../../src/backend/cpu/ops/embedding.ts';
import {
  addInPlace,
  concatenateColumns,
  embedRecords,
  gatherCodes,
  moveSlotRecords,
} from '../../../src/backend/cuda/ops/records.ts';
import {
  BF16_ONE_ROUNDING_BOUND,
  type InvarianceCase,
  type KernelCase,
  type Prepared,
  type ShapeCase,
} from './contract.ts';
import { type Bf16Tensor, drawnOnce, plant, type Random, randomBf16, streamOf } from './random.ts';

const WIDTH = 11;

/** Records of `rows` rows: about a third text rows (code[0] = −1); codes below each codebook's size. */
function records(random: Random, rows: number, vocab: number, codeSize: number, masked = true): Int32Array {
  const out = new Int32Array(rows * WIDTH);
  for (let t = 0; t < rows; t++) {
    out[t * WIDTH] = random.integer(vocab);
    const text = masked && random.next() < 0.33;
    for (let k = 0; k < WIDTH - 1; k++) out[t * WIDTH + 1 + k] = text ? -1 : random.integer(codeSize);
  }
  return out;
}

function embedPrepare(
  tokenTable: Bf16Tensor,
  codeTable: Bf16Tensor,
  ids: Int32Array,
  rows: number,
  cols: number,
  vocab: number,
  codeRows: number,
  codebook: number,
  codeFirstRow: number,
): Prepared {
  return {
    inputs: { tokenTable, codeTable, records: ids },
    outputs: [{ name: 'out', kind: 'bf16', count: rows * cols }],
    reference() {
      const out = new Float64Array(rows * cols);
      for (let t = 0; t < rows; t++) {
        const token = ids[t * WIDTH]!;
        if (ids[t * WIDTH + 1]! < 0) {
          out.set(tokenTable.values.subarray(token * cols, (token + 1) * cols), t * cols);
          continue;
        }
        const code = codeFirstRow + ids[t * WIDTH + 1 + codebook]!;
        frameRow(tokenTable.values, codeTable.values, token, code, out, t * cols, cols);
      }
      return { out };
    },
    run(cuda, p, kernel) {
      embedRecords(
        cuda,
        {
          out: p.out!,
          tokenTable: p.tokenTable!,
          vocab,
          codeTable: p.codeTable!,
          codeRows,
          cols,
          records: p.records!,
          width: WIDTH,
          codebook,
          codeFirstRow,
          rows,
        },
        { kernel },
      );
    },
  };
}

function embedShape(label: string, rows: number, cols: number, vocab: number): ShapeCase {
  return {
    label: `${label} [${rows}, ${cols}]`,
    prepare(random: Random, nonFinite: boolean): Prepared {
      const codeRows = 4096 + 9 * 1024;
      const tokenTable = randomBf16(random, vocab * cols);
      const codeTable = randomBf16(random, codeRows * cols);
      const ids = records(random, rows, vocab, 1024);
      if (nonFinite) {
        plant(tokenTable, ids[0]! * cols, Number.NaN);
        plant(codeTable, (4096 + ids[(rows - 1) * WIDTH + 2]!) * cols + 1, Number.POSITIVE_INFINITY);
      }
      return embedPrepare(tokenTable, codeTable, ids, rows, cols, vocab, codeRows, 1, 4096);
    },
  };
}

const embedInvariance: InvarianceCase = {
  label: 'a record alone and beside others',
  prepare(seed, rows) {
    const cols = 2048;
    const vocab = 3000;
    const codeRows = 4096 + 1024;
    // The tables once per seed (the same at every row count), the records in order from their own stream.
    const tokenTable = drawnOnce('record tokens', seed, () => randomBf16(streamOf(seed, 0), vocab * cols));
    const codeTable = drawnOnce('record codes', seed, () => randomBf16(streamOf(seed, 1), codeRows * cols));
    return embedPrepare(
      tokenTable,
      codeTable,
      records(streamOf(seed, 2), rows, vocab, 1024),
      rows,
      cols,
      vocab,
      codeRows,
      1,
      4096,
    );
  },
  elementsPerRow: { out: 2048 },
};

export const embedRecordsCase: KernelCase = {
  name: 'embed_records (text rows and frame rows)',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    embedShape('one row', 1, 2048, 5000),
    embedShape('odd sizes', 37, 1000, 777),
    embedShape('prefill chunk', 256, 2048, 5000),
  ],
  invariance: [embedInvariance],
};

function gatherShape(rows: number, cols: number, codebook: number): ShapeCase {
  return {
    label: `codebook ${codebook} [${rows}, ${cols}]`,
    prepare(random: Random, nonFinite: boolean): Prepared {
      const codeRows = 4096 + 9 * 1024;
      const codeFirstRow = codebook === 0 ? 0 : 4096 + (codebook - 1) * 1024;
      const codeTable = randomBf16(random, codeRows * cols);
      const ids = records(random, rows, 100, 1024);
      if (nonFinite) plant(codeTable, (codeFirstRow + Math.max(0, ids[1 + codebook]!)) * cols, Number.NaN);
      return {
        inputs: { codeTable, records: ids },
        outputs: [{ name: 'out', kind: 'bf16', count: rows * cols }],
        reference() {
          const out = new Float64Array(rows * cols);
          for (let t = 0; t < rows; t++) {
            const code = ids[t * WIDTH + 1 + codebook]!;
            if (code >= 0)
              out.set(
                codeTable.values.subarray((codeFirstRow + code) * cols, (codeFirstRow + code + 1) * cols),
                t * cols,
              );
          }
          return { out };
        },
        run(cuda, p, kernel) {
          gatherCodes(
            cuda,
            {
              out: p.out!,
              codeTable: p.codeTable!,
              codeRows,
              records: p.records!,
              width: WIDTH,
              codebook,
              codeFirstRow,
              rows,
              cols,
            },
            { kernel },
          );
        },
      };
    },
  };
}

export const gatherCodesCase: KernelCase = {
  name: 'gather_codes (masked rows are zeros)',
  bound: 0,
  ulps: 0,
  shapes: [gatherShape(1, 2048, 0), gatherShape(37, 1000, 3), gatherShape(64, 2048, 9)],
};

function slotShape(direction: 'gather' | 'scatter', batch: number, slots: number): ShapeCase {
  return {
    label: `${direction}, ${batch} lanes of ${slots} slots`,
    prepare(random: Random): Prepared {
      const laneStride = 9;
      const order = Array.from({ length: slots }, (_, slot) => slot);
      for (let i = slots - 1; i > 0; i--) {
        const j = random.integer(i + 1);
        [order[i], order[j]] = [order[j]!, order[i]!];
      }
      const lanes = new Int32Array(batch * laneStride);
      for (let b = 0; b < batch; b++) lanes[b * laneStride] = order[b]!;
      const slab = Int32Array.from({ length: slots * WIDTH }, () => random.integer(1 << 30));
      const recordsIn = Int32Array.from({ length: batch * WIDTH }, () => random.integer(1 << 30));
      const gather = direction === 'gather';
      return {
        inputs: { lanes, slabIn: slab, recordsIn },
        outputs: [{ name: 'target', kind: 'i32', count: gather ? batch * WIDTH : slots * WIDTH }],
        reference() {
          if (gather) {
            const target = new Int32Array(batch * WIDTH);
            for (let b = 0; b < batch; b++)
              target.set(slab.subarray(order[b]! * WIDTH, (order[b]! + 1) * WIDTH), b * WIDTH);
            return { target };
          }
          const target = slab.slice();
          for (let b = 0; b < batch; b++) target.set(recordsIn.subarray(b * WIDTH, (b + 1) * WIDTH), order[b]! * WIDTH);
          return { target };
        },
        run(cuda, p, kernel) {
          if (!gather) cuda.driver.copyDeviceToDevice(p.target!, p.slabIn!, slab.byteLength, cuda.stream);
          moveSlotRecords(
            cuda,
            {
              direction,
              records: gather ? p.target! : p.recordsIn!,
              slab: gather ? p.slabIn! : p.target!,
              lanes: p.lanes!,
              laneStride,
              width: WIDTH,
              batch,
            },
            { kernel },
          );
        },
      };
    },
  };
}

export const slotRecordsCase: KernelCase = {
  name: 'gather/scatter slot records',
  bound: 0,
  ulps: 0,
  shapes: [
    slotShape('gather', 1, 4),
    slotShape('gather', 64, 65),
    slotShape('scatter', 7, 9),
    slotShape('scatter', 64, 65),
  ],
};

function elementwiseShape(kind: 'add' | 'concat', rows: number, aCols: number, bCols: number): ShapeCase {
  return {
    label: `${kind} [${rows}, ${aCols}${kind === 'concat' ? ` | ${bCols}` : ''}]`,
    prepare(random: Random, nonFinite: boolean): Prepared {
      const a = randomBf16(random, rows * aCols);
      const b = randomBf16(random, rows * (kind === 'add' ? aCols : bCols));
      if (nonFinite) {
        plant(a, 0, Number.NaN);
        plant(b, b.bits.length - 1, Number.NEGATIVE_INFINITY);
      }
      const width = kind === 'add' ? aCols : aCols + bCols;
      return {
        inputs: { a, b },
        outputs: [{ name: 'out', kind: 'bf16', count: rows * width }],
        reference() {
          const out = new Float64Array(rows * width);
          for (let t = 0; t < rows; t++) {
            if (kind === 'add')
              for (let c = 0; c < aCols; c++) out[t * aCols + c] = a.values[t * aCols + c]! + b.values[t * aCols + c]!;
            else {
              out.set(a.values.subarray(t * aCols, (t + 1) * aCols), t * width);
              out.set(b.values.subarray(t * bCols, (t + 1) * bCols), t * width + aCols);
            }
          }
          return { out };
        },
        run(cuda, p, kernel) {
          if (kind === 'add') {
            cuda.driver.copyDeviceToDevice(p.out!, p.a!, a.bits.byteLength, cuda.stream);
            addInPlace(cuda, { target: p.out!, source: p.b!, count: rows * aCols }, { kernel });
          } else {
            concatenateColumns(cuda, { out: p.out!, a: p.a!, aCols, b: p.b!, bCols, rows }, { kernel });
          }
        },
      };
    },
  };
}

export const addCase: KernelCase = {
  name: 'add (residual)',
  bound: BF16_ONE_ROUNDING_BOUND,
  ulps: 1,
  shapes: [
    elementwiseShape('add', 1, 2048, 0),
    elementwiseShape('add', 37, 1000, 0),
    elementwiseShape('add', 256, 2048, 0),
  ],
};

export const concatCase: KernelCase = {
  name: 'concatenate columns',
  bound: 0,
  ulps: 0,
  shapes: [
    elementwiseShape('concat', 1, 2048, 2048),
    elementwiseShape('concat', 37, 999, 64),
    elementwiseShape('concat', 64, 2048, 2048),
  ],
};
