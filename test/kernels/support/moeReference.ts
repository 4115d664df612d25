// Host side of the MoE kernel cases: random FP8 experts packed as the device holds them (src/backend/cuda/
// moeWeights.ts), quantised activations, routings, and the fp64 reference built from the cpu ops
// (src/backend/cpu/ops/fp8.ts, activations.ts) with the kernels' bf16 rounding points, one pair or row at a time.
import { sigmoid, silu } from '../../../src/backend/cpu/ops/activations.ts';
import { linearFp8Block, quantizeActivationsE4m3 } from '../../../src/backend/cpu/ops/fp8.ts';
import { packDownFp8, packGateUpFp8, packGateUpScales } from '../../../src/backend/cuda/moeWeights.ts';
import { e4m3ValueTable, float32ToE4m3Bits, roundToBf16 } from '../../../src/numeric/dtypes.ts';
import type { Random } from './random.ts';

export interface MoeGeometry {
  readonly hidden: number;
  readonly intermediate: number;
  readonly experts: number;
  readonly topK: number;
}

export const REAL_MOE: MoeGeometry = { hidden: 2048, intermediate: 512, experts: 256, topK: 8 };
export const SMALL_MOE: MoeGeometry = { hidden: 2048, intermediate: 512, experts: 8, topK: 2 };

/** Distinct weight sets; every expert also has its own block scales, so no two experts compute alike. */
const POOL = 4;

export interface Fp8Experts {
  readonly geometry: MoeGeometry;
  /** Device layout. */
  readonly gateUp: Uint8Array;
  readonly gateUpScales: Float32Array;
  readonly down: Uint8Array;
  readonly downScales: Float32Array;
  /** Reference views: expert e uses weight set e % POOL with its own scales. */
  readonly gateValues: readonly Float32Array[];
  readonly upValues: readonly Float32Array[];
  readonly downValues: readonly Float32Array[];
}

/** e4m3 bytes of normal draws (σ = 64), looked up by 16 random bits: fast enough for 3 MB per weight set. */
let e4m3NormalBytes: Uint8Array | undefined;

function randomE4m3Bytes(random: Random, count: number): Uint8Array {
  if (!e4m3NormalBytes) {
    e4m3NormalBytes = new Uint8Array(65536);
    for (let index = 0; index < 65536; index++) {
      const u = (index + 0.5) / 65536;
      // A logistic quantile scaled to σ ≈ 64: close enough to normal for test weights, and cheap.
      const value = 64 * Math.log(u / (1 - u)) * 0.551;
      e4m3NormalBytes[index] = float32ToE4m3Bits(Math.fround(value));
    }
  }
  const bytes = new Uint8Array(count);
  for (let index = 0; index < count; index += 2) {
    const bits = Math.floor(random.next() * 4294967296);
    bytes[index] = e4m3NormalBytes[bits & 0xffff]!;
    if (index + 1 < count) bytes[index + 1] = e4m3NormalBytes[bits >>> 16]!;
  }
  return bytes;
}

function widen(bytes: Uint8Array): Float32Array {
  const table = e4m3ValueTable();
  const values = new Float32Array(bytes.length);
  for (let index = 0; index < bytes.length; index++) values[index] = table[bytes[index]!]!;
  return values;
}

/** Block scales around `typical` (value = byte × scale), one per 128×128 block. */
function randomScales(random: Random, count: number, typical: number): Float32Array {
  const scales = new Float32Array(count);
  for (let index = 0; index < count; index++) scales[index] = typical * (0.5 + random.next());
  return scales;
}

export function randomFp8Experts(random: Random, geometry: MoeGeometry): Fp8Experts {
  const { hidden, intermediate, experts } = geometry;
  const projection = hidden * intermediate;
  const gateUp = new Uint8Array(experts * 2 * projection);
  const down = new Uint8Array(experts * projection);
  const gateValues: Float32Array[] = [];
  const upValues: Float32Array[] = [];
  const downValues: Float32Array[] = [];
  for (let set = 0; set < Math.min(POOL, experts); set++) {
    const gate = randomE4m3Bytes(random, projection);
    const up = randomE4m3Bytes(random, projection);
    const downBytes = randomE4m3Bytes(random, projection);
    packGateUpFp8(gate, up, hidden, intermediate, gateUp, set);
    packDownFp8(downBytes, hidden, intermediate, down, set);
    gateValues.push(widen(gate));
    upValues.push(widen(up));
    downValues.push(widen(downBytes));
  }
  for (let e = POOL; e < experts; e++) {
    const set = e % POOL;
    gateUp.copyWithin(e * 2 * projection, set * 2 * projection, (set + 1) * 2 * projection);
    down.copyWithin(e * projection, set * projection, (set + 1) * projection);
  }
  // Bytes have σ ≈ 64: scales give the true weights σ ≈ 1/sqrt(fan-in).
  const blocks = (hidden / 128) * (intermediate / 128);
  const gateUpScales = new Float32Array(experts * 2 * blocks);
  for (let e = 0; e < experts; e++) {
    const gate = randomScales(random, blocks, 1 / (64 * Math.sqrt(hidden)));
    const up = randomScales(random, blocks, 1 / (64 * Math.sqrt(hidden)));
    packGateUpScales(gate, up, gateUpScales, e);
  }
  const downScales = randomScales(random, experts * blocks, 1 / (64 * Math.sqrt(intermediate)));
  return { geometry, gateUp, gateUpScales, down, downScales, gateValues, upValues, downValues };
}

/** Activations quantised per row per 128 columns exactly as quantizeActivationsE4m3, with the e4m3 bytes. */
export interface QuantizedRows {
  readonly bits: Uint8Array;
  readonly values: Float64Array;
  readonly scales: Float32Array;
}

export function quantizeRows(x: Float64Array, rows: number, cols: number): QuantizedRows {
  const values = new Float64Array(rows * cols);
  const blocks = cols / 128;
  const scales = new Float32Array(rows * blocks);
  quantizeActivationsE4m3(x, rows, cols, values, scales);
  const bits = new Uint8Array(rows * cols);
  for (let t = 0; t < rows; t++) {
    for (let i = 0; i < cols; i++) {
      const scale = scales[t * blocks + Math.floor(i / 128)]!;
      bits[t * cols + i] = float32ToE4m3Bits(Math.fround(x[t * cols + i]! / scale));
    }
  }
  return { bits, values, scales };
}

/** Top-k ids (distinct per row unless `alwaysExpert` repeats one) and weights that sum to 1, drawn row by row. */
export function randomRoutingRow(
  random: Random,
  geometry: MoeGeometry,
  ids: Int32Array,
  weights: Float32Array,
  row: number,
  alwaysExpert?: number,
): void {
  const { experts, topK } = geometry;
  const chosen = new Set<number>();
  if (alwaysExpert !== undefined) chosen.add(alwaysExpert);
  while (chosen.size < topK) chosen.add(random.integer(experts));
  const raw = [...chosen].map(() => 0.05 + random.next());
  const sum = raw.reduce((a, b) => a + b, 0);
  [...chosen].forEach((expert, k) => {
    ids[row * topK + k] = expert;
    weights[row * topK + k] = Math.fround(raw[k]! / sum);
  });
}

/** The grouping moe_group_pairs must produce: slots by expert then slot, offsets, tiles (padded with −1), count. */
export function referenceGrouping(ids: Int32Array, experts: number, tilePairs: number, maxTiles: number) {
  const pairSlots = new Int32Array(ids.length).fill(-1);
  const expertOffsets = new Int32Array(experts + 1);
  const tiles = new Int32Array(maxTiles * 4);
  for (let tile = 0; tile < maxTiles; tile++) tiles[tile * 4] = -1;
  let position = 0;
  let tileCount = 0;
  for (let e = 0; e < experts; e++) {
    expertOffsets[e] = position;
    const first = position;
    for (let slot = 0; slot < ids.length; slot++) if (ids[slot] === e) pairSlots[position++] = slot;
    for (let begin = first; begin < position; begin += tilePairs) {
      tiles.set([e, begin, Math.min(tilePairs, position - begin), 0], tileCount * 4);
      tileCount++;
    }
  }
  expertOffsets[experts] = position;
  return { pairSlots, expertOffsets, tiles, tileCount: Int32Array.of(tileCount) };
}

/** h for one pair: gate and up rounded to bf16, SwiGLU in fp64 (unrounded: the kernel's one output rounding). */
export function referenceGateUp(experts: Fp8Experts, expert: number, q: QuantizedRows, token: number): Float64Array {
  const { hidden, intermediate } = experts.geometry;
  const row = q.values.subarray(token * hidden, (token + 1) * hidden);
  const rowScales = q.scales.subarray((token * hidden) / 128, ((token + 1) * hidden) / 128);
  const blocks = (hidden / 128) * (intermediate / 128);
  const gate = new Float64Array(intermediate);
  const up = new Float64Array(intermediate);
  const scales = experts.gateUpScales.subarray(expert * 2 * blocks, (expert + 1) * 2 * blocks);
  linearFp8Block(
    row,
    rowScales,
    experts.gateValues[expert % POOL]!,
    scales.subarray(0, blocks),
    gate,
    1,
    hidden,
    intermediate,
  );
  linearFp8Block(
    row,
    rowScales,
    experts.upValues[expert % POOL]!,
    scales.subarray(blocks),
    up,
    1,
    hidden,
    intermediate,
  );
  const h = new Float64Array(intermediate);
  for (let j = 0; j < intermediate; j++) h[j] = silu(roundToBf16(gate[j]!)) * roundToBf16(up[j]!);
  return h;
}

/** y for one pair from its bf16 h: quantised as the cpu does, the FP8 block linear in fp64 (unrounded). */
export function referenceDown(experts: Fp8Experts, expert: number, h: Float64Array): Float64Array {
  const { hidden, intermediate } = experts.geometry;
  const q = quantizeRows(h, 1, intermediate);
  const blocks = (hidden / 128) * (intermediate / 128);
  const y = new Float64Array(hidden);
  const scales = experts.downScales.subarray(expert * blocks, (expert + 1) * blocks);
  linearFp8Block(q.values, q.scales, experts.downValues[expert % POOL]!, scales, y, 1, intermediate, hidden);
  return y;
}

/** One row of the combine: ranks in ascending expert id, bf16 weights, fp64 sums, plus the gated shared expert. */
export function referenceCombineRow(
  y: (k: number, column: number) => number,
  ids: ArrayLike<number>,
  weights: ArrayLike<number>,
  shared: (column: number) => number,
  gateLogit: number,
  experts: number,
  hidden: number,
  out: Float64Array,
): void {
  const ranks = Array.from({ length: ids.length }, (_, k) => k).sort((a, b) => ids[a]! - ids[b]! || a - b);
  const valid = ranks.every((k) => ids[k]! >= 0 && ids[k]! < experts);
  const scale = sigmoid(gateLogit);
  for (let c = 0; c < hidden; c++) {
    let total = 0;
    for (const k of ranks) total += roundToBf16(weights[k]!) * y(k, c);
    out[c] = valid ? total + scale * shared(c) : Number.NaN;
  }
}
