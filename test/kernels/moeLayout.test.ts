// The FP8 experts' fragment layout (src/backend/cuda/moeWeights.ts) read back the way kernels/cuda/moe_fp8.cuh reads
// it: each lane's words, k-steps and byte order fed through the mma.sync m16n8k16 fragment layout must give every
// 128-column block's dot products exactly. Also the MoE launchers' argument checks. Runs without a GPU.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CudaContext } from '../../src/backend/cuda/context.ts';
import { packDownFp8, packGateUpBf16, packGateUpFp8 } from '../../src/backend/cuda/moeWeights.ts';
import { moeCombine, moeGateUpFp8, moeMaxTiles } from '../../src/backend/cuda/ops/moe.ts';
import { bf16BitsToFloat32, e4m3ValueTable, float32ToBf16Bits } from '../../src/numeric/dtypes.ts';
import { referenceGrouping } from './support/moeReference.ts';
import { Random } from './support/random.ts';

const table = e4m3ValueTable();

function randomFiniteE4m3(random: Random, count: number): Uint8Array {
  const bytes = new Uint8Array(count);
  for (let index = 0; index < count; index++) {
    let value = random.integer(256);
    while ((value & 0x7f) === 0x7f) value = random.integer(256);
    bytes[index] = value;
  }
  return bytes;
}

/**
 * What one warp's mma steps compute for row group `group`, block `block`: D[m][n] = Σ_k A[m][k]·B[k][n] with A and B
 * assembled from each lane's registers as the kernel loads them (weights: chunk c of 16 B at (c·32 + lane)·16, word
 * v = step·2 + half; activations: 32 B at column 32·(lane & 3) of the block, word = step).
 */
function emulateBlock(packed: Uint8Array, base: number, x: Uint8Array, columns: number, block: number): number[][] {
  const d = Array.from({ length: 16 }, () => new Array<number>(8).fill(0));
  for (let step = 0; step < 8; step++) {
    const a = Array.from({ length: 16 }, () => new Array<number>(16).fill(Number.NaN));
    const b = Array.from({ length: 16 }, () => new Array<number>(8).fill(Number.NaN));
    for (let lane = 0; lane < 32; lane++) {
      const g = lane >> 2;
      const t = lane & 3;
      const word = (v: number) => base + ((v >> 2) * 32 + lane) * 16 + 4 * (v & 3);
      const low = word(2 * step);
      const high = word(2 * step + 1);
      const xWord = g * columns + block * 128 + 32 * t + 4 * step;
      for (let j = 0; j < 2; j++) {
        a[g]![2 * t + j] = table[packed[low + j]!]!;
        a[g + 8]![2 * t + j] = table[packed[high + j]!]!;
        a[g]![8 + 2 * t + j] = table[packed[low + 2 + j]!]!;
        a[g + 8]![8 + 2 * t + j] = table[packed[high + 2 + j]!]!;
        b[2 * t + j]![g] = table[x[xWord + j]!]!;
        b[8 + 2 * t + j]![g] = table[x[xWord + 2 + j]!]!;
      }
    }
    for (let m = 0; m < 16; m++) {
      for (let n = 0; n < 8; n++) for (let k = 0; k < 16; k++) d[m]![n]! += a[m]![k]! * b[k]![n]!;
    }
  }
  return d;
}

function direct(weights: Uint8Array, row: number, x: Uint8Array, n: number, columns: number, block: number): number {
  let sum = 0;
  for (let i = block * 128; i < (block + 1) * 128; i++)
    sum += table[weights[row * columns + i]!]! * table[x[n * columns + i]!]!;
  return sum;
}

test('gate|up fragment layout: each row group holds gate rows 8r.. then up rows 8r.., every block exact', () => {
  const random = new Random(12);
  const hidden = 256;
  const intermediate = 16;
  const gate = randomFiniteE4m3(random, intermediate * hidden);
  const up = randomFiniteE4m3(random, intermediate * hidden);
  const x = randomFiniteE4m3(random, 8 * hidden);
  const packed = new Uint8Array(2 * 2 * intermediate * hidden);
  packGateUpFp8(gate, up, hidden, intermediate, packed, 1);
  const expertBase = 2 * intermediate * hidden;
  for (let group = 0; group < (2 * intermediate) / 16; group++) {
    for (let block = 0; block < hidden / 128; block++) {
      const base = expertBase + (group * (hidden / 128) + block) * 2048;
      const d = emulateBlock(packed, base, x, hidden, block);
      for (let m = 0; m < 16; m++) {
        const [weights, row] = m < 8 ? [gate, 8 * group + m] : [up, 8 * group + m - 8];
        for (let n = 0; n < 8; n++) assert.equal(d[m]![n], direct(weights, row, x, n, hidden, block));
      }
    }
  }
});

test('down fragment layout: row group r holds rows 16r..16r+15, every block exact', () => {
  const random = new Random(13);
  const hidden = 32;
  const intermediate = 256;
  const down = randomFiniteE4m3(random, hidden * intermediate);
  const x = randomFiniteE4m3(random, 8 * intermediate);
  const packed = new Uint8Array(hidden * intermediate);
  packDownFp8(down, hidden, intermediate, packed, 0);
  for (let group = 0; group < hidden / 16; group++) {
    for (let block = 0; block < intermediate / 128; block++) {
      const d = emulateBlock(packed, (group * (intermediate / 128) + block) * 2048, x, intermediate, block);
      for (let m = 0; m < 16; m++) {
        for (let n = 0; n < 8; n++) assert.equal(d[m]![n], direct(down, 16 * group + m, x, n, intermediate, block));
      }
    }
  }
});

/** The bf16 kernel's reads: chunk c = k-step c, word v = row g + 8·(v & 1), pair v >> 1; activations word 2c + p. */
function emulateBf16Block(packed: Uint16Array, base: number, x: Uint16Array, columns: number, block: number) {
  const d = Array.from({ length: 16 }, () => new Array<number>(8).fill(0));
  for (let step = 0; step < 4; step++) {
    const a = Array.from({ length: 16 }, () => new Array<number>(16).fill(Number.NaN));
    const b = Array.from({ length: 16 }, () => new Array<number>(8).fill(Number.NaN));
    for (let lane = 0; lane < 32; lane++) {
      const g = lane >> 2;
      const t = lane & 3;
      for (let v = 0; v < 4; v++) {
        const at = base + (step * 32 + lane) * 8 + 2 * v;
        const row = g + 8 * (v & 1);
        const slot = 8 * (v >> 1) + 2 * t;
        a[row]![slot] = bf16BitsToFloat32(packed[at]!);
        a[row]![slot + 1] = bf16BitsToFloat32(packed[at + 1]!);
      }
      for (let p = 0; p < 2; p++) {
        const at = g * columns + block * 64 + 16 * t + 2 * (2 * step + p);
        b[8 * p + 2 * t]![g] = bf16BitsToFloat32(x[at]!);
        b[8 * p + 2 * t + 1]![g] = bf16BitsToFloat32(x[at + 1]!);
      }
    }
    for (let m = 0; m < 16; m++) {
      for (let n = 0; n < 8; n++) for (let k = 0; k < 16; k++) d[m]![n]! += a[m]![k]! * b[k]![n]!;
    }
  }
  return d;
}

test('bf16 gate|up fragment layout: 16 rows × 64 columns per block, every block exact', () => {
  const random = new Random(14);
  const hidden = 128;
  const intermediate = 16;
  const draw = (count: number) => Uint16Array.from({ length: count }, () => float32ToBf16Bits(random.integer(17) - 8));
  const gate = draw(intermediate * hidden);
  const up = draw(intermediate * hidden);
  const x = draw(8 * hidden);
  const packed = new Uint16Array(2 * intermediate * hidden);
  packGateUpBf16(gate, up, hidden, intermediate, packed, 0);
  for (let group = 0; group < (2 * intermediate) / 16; group++) {
    for (let block = 0; block < hidden / 64; block++) {
      const d = emulateBf16Block(packed, (group * (hidden / 64) + block) * 1024, x, hidden, block);
      for (let m = 0; m < 16; m++) {
        const [weights, row] = m < 8 ? [gate, 8 * group + m] : [up, 8 * group + m - 8];
        for (let n = 0; n < 8; n++) {
          let sum = 0;
          for (let i = block * 64; i < (block + 1) * 64; i++) {
            sum += bf16BitsToFloat32(weights[row * hidden + i]!) * bf16BitsToFloat32(x[n * hidden + i]!);
          }
          assert.equal(d[m]![n], sum);
        }
      }
    }
  }
});

test('the worst-case tile count covers any routing, the skewed one included', () => {
  const ids = new Int32Array(257 * 8).fill(3);
  assert.ok(referenceGrouping(ids, 256, 8, moeMaxTiles(ids.length, 256)).tileCount[0]! <= moeMaxTiles(ids.length, 256));
  const spread = Int32Array.from({ length: 257 * 8 }, (_, slot) => slot % 256);
  const grouping = referenceGrouping(spread, 256, 8, moeMaxTiles(spread.length, 256));
  // 2056 slots: 8 experts get 9 (two tiles each), 248 get 8 (one tile).
  assert.equal(grouping.tileCount[0], 248 + 8 * 2);
  assert.ok(grouping.tileCount[0]! <= moeMaxTiles(spread.length, 256));
});

test('MoE launchers name the bad argument before launching anything', () => {
  const cuda = {} as CudaContext;
  const grouping = { pairSlots: 0n, expertOffsets: 0n, tiles: 0n, tileCount: 0n };
  const weights = { gateUp: 0n, gateUpScales: 0n, down: 0n, downScales: 0n };
  const gateUp = { ...grouping, h: 0n, quantized: 0n, scales: 0n, weights, rows: 1, topK: 8, experts: 256 };
  const refuses = (run: () => void, param: string) =>
    assert.throws(
      run,
      (error: { code?: string; param?: string }) => error.code === 'KERNEL_ARGUMENT_INVALID' && error.param === param,
    );
  refuses(() => moeGateUpFp8(cuda, { ...gateUp, hidden: 2000, intermediate: 512 }), 'hidden');
  refuses(() => moeGateUpFp8(cuda, { ...gateUp, hidden: 2048, intermediate: 4096 }), 'intermediate');
  refuses(() => moeGateUpFp8(cuda, { ...gateUp, experts: 300, hidden: 2048, intermediate: 512 }), 'experts');
  refuses(() => moeGateUpFp8(cuda, { ...gateUp, topK: 17, hidden: 2048, intermediate: 512 }), 'topK');
  const combine = { out: 0n, expertOut: 0n, expertIds: 0n, expertWeights: 0n, sharedOut: 0n, sharedGate: 0n };
  refuses(() => moeCombine(cuda, { ...combine, rows: 0, topK: 8, experts: 256, hidden: 2048 }), 'rows');
  refuses(() => moeCombine(cuda, { ...combine, rows: 1, topK: 8, experts: 256, hidden: 2044 }), 'hidden');
});
