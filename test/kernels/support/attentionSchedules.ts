// Schedule cases for the attention family (contract.ts InvarianceCase, EquivalenceCase):
//   invariance   decode lanes at other slots and positions (some past two split points): lane r's output is the
//                same bits in calls of 1, 2, 7, 64 and 257 lanes (the last runs the grouped kernel, the others the
//                per-row kernel); and rows in runs of consecutive positions of a few slots, runs of uneven lengths
//                that start just short of split points or jump ahead, so that the 257-row call's groups of 4 rows
//                straddle split points, mix slots and hold rows of one slot far apart, each row held to its bits
//                walked alone; and decode lanes over a slab long enough that calls of at most 4 lanes run the
//                few-rows kernel's shared form, one lane walked by either of its walks, the same bits as 7 lanes
//   equivalence  a prefill of 257 rows (prepare + attention, KV carried in the slab) whole and in chunks of 1, 7, 64
//                and 66 rows (66: the grouped kernel again, its groups cut elsewhere), from positions 0, 1000, 2046
//                and 8190 (the last two: a group of the whole call straddles a split point); a lane's decode
//                row, beside other lanes, against the last row of its whole prefill; and a decode call whose KV
//                heads' query heads are walked by one block of the whole group, or by blocks of fewer heads
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import {
  ATTENTION_SPLIT_KEYS,
  attention,
  attentionPrepare,
  attentionWorkspaceBytes,
} from '../../../src/backend/cuda/ops/attention.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import {
  ATTENTION_EPS,
  ATTENTION_THETA,
  type AttentionGeometry,
  BACKBONE,
  type CallRows,
  historySlab,
  LONG_SLAB_ROWS,
  rowTable,
  sequenceRows,
  TOWER,
} from './attentionReference.ts';
import type { EquivalenceCase, InvarianceCase, Prepared } from './contract.ts';
import { type Bf16Tensor, Random, randomBf16 } from './random.ts';

type Pointers = Readonly<Record<string, bigint>>;

/** A control replaces the kernel it mimics: the prepare kernel or the attention kernel. */
function overrides(kernel: KernelName | undefined) {
  const prepare = kernel?.name.includes('prepare') ? kernel : undefined;
  return { prepare, attention: prepare ? undefined : kernel };
}

const INVARIANCE_SLOTS = 8;
const INVARIANCE_CAPACITY = 2200;

/**
 * Histories of `slots` slots filled to `capacity`, then for each lane its (slot, position) from `place` and its q and
 * gate rows, drawn lane by lane from `random` in that order, so the first r lanes are the same for any count.
 */
function lanesOverHistories(
  random: Random,
  g: AttentionGeometry,
  slots: number,
  capacity: number,
  count: number,
  place: (lane: number) => readonly [slot: number, position: number],
): Prepared {
  const { queryHeads: hq, kvHeads: hkv, headDim: d } = g;
  const filled = new Array<number>(slots).fill(capacity);
  const keys = historySlab(random, g, capacity, filled);
  const values = historySlab(random, g, capacity, filled);
  const rows: CallRows = { slots: new Int32Array(count), positions: new Int32Array(count) };
  const qRows = new Uint16Array(count * hq * d);
  const gateRows = new Uint16Array(count * hq * d);
  for (let lane = 0; lane < count; lane++) {
    [rows.slots[lane], rows.positions[lane]] = place(lane);
    qRows.set(randomBf16(random, hq * d, 1).bits, lane * hq * d);
    gateRows.set(randomBf16(random, hq * d, 2).bits, lane * hq * d);
  }
  const geometry = { queryHeads: hq, kvHeads: hkv, headDim: d, slots, capacity };
  return invariancePrepared(g, geometry, count, { rows, qRows, gateRows, keys, values });
}

function invarianceCase(g: AttentionGeometry): InvarianceCase {
  return {
    label: `attention ${g.label}, decode lanes at ${INVARIANCE_SLOTS} slots, positions up to ${INVARIANCE_CAPACITY}`,
    elementsPerRow: { out: g.queryHeads * g.headDim },
    prepare(seed: number, count: number): Prepared {
      const random = new Random(seed);
      return lanesOverHistories(random, g, INVARIANCE_SLOTS, INVARIANCE_CAPACITY, count, (lane) => [
        lane % INVARIANCE_SLOTS,
        random.integer(INVARIANCE_CAPACITY),
      ]);
    },
  };
}

const RUN_SLOTS = 4;
const RUN_CAPACITY = 4400;

/**
 * Rows in runs of consecutive positions: each run takes a slot, a length of 1 to 9 and either its slot's next
 * position or a start 0 to 5 short of a split point. Drawn row by row, so the first r rows are the same for any count.
 */
function runInvarianceCase(g: AttentionGeometry): InvarianceCase {
  return {
    label: `attention ${g.label}, prefill-like runs of ${RUN_SLOTS} slots, positions up to ${RUN_CAPACITY}`,
    elementsPerRow: { out: g.queryHeads * g.headDim },
    prepare(seed: number, count: number): Prepared {
      const random = new Random(seed);
      const next = new Array<number>(RUN_SLOTS).fill(0);
      let slot = 0;
      let left = 0;
      return lanesOverHistories(random, g, RUN_SLOTS, RUN_CAPACITY, count, () => {
        if (left === 0 || next[slot]! >= RUN_CAPACITY) {
          slot = random.integer(RUN_SLOTS);
          left = 1 + random.integer(9);
          if (random.integer(2) === 0 || next[slot]! >= RUN_CAPACITY - 16) {
            const splitPoint = ATTENTION_SPLIT_KEYS * (1 + random.integer(Math.floor(RUN_CAPACITY / 256) - 1));
            next[slot] = splitPoint - random.integer(6);
          }
        }
        const position = next[slot]!;
        next[slot]! += 1;
        left--;
        return [slot, position];
      });
    },
  };
}

/**
 * Decode lanes of one slot of LONG_SLAB_ROWS rows in calls of 1, 2, 4 and 7 lanes (the last: the per-row walk alone).
 * firstLong: lane 0 past 16384 keys (a 1-lane call is the shared form's per-row walk's), else short of 8000 (its
 * few-rows walk's); the other lanes past 16240 keys, so calls of 2 and 4 lanes are the per-row walk's.
 */
function longSlabInvarianceCase(g: AttentionGeometry, firstLong: boolean): InvarianceCase {
  return {
    label: `attention ${g.label}, decode lanes over a slab of ${LONG_SLAB_ROWS} rows, lane 0 ${firstLong ? 'past 16384' : 'short of 8000'} keys`,
    elementsPerRow: { out: g.queryHeads * g.headDim },
    rowCounts: [1, 2, 4, 7],
    prepare(seed: number, count: number): Prepared {
      const random = new Random(seed);
      return lanesOverHistories(random, g, 1, LONG_SLAB_ROWS, count, (lane) => {
        if (lane === 0 && !firstLong) return [0, random.integer(8000)];
        return [0, lane === 0 ? 16384 + random.integer(256) : LONG_SLAB_ROWS - 1 - random.integer(400)];
      });
    },
  };
}

interface Pipeline {
  readonly g: AttentionGeometry;
  readonly slots: number;
  readonly capacity: number;
}

/** Device scratch the schedules write and never compare (no reference reads it). */
function scratchBf16(count: number): Bf16Tensor {
  return { bits: new Uint16Array(count), values: new Float64Array(0) };
}

function bytes(elements: number): bigint {
  return BigInt(2 * elements);
}

/** prepare + attention of rows [first, first + count) of the call whose buffers are at `p` (out and q at `target`). */
function runRows(
  cuda: CudaContext,
  pipeline: Pipeline,
  p: Pointers,
  names: { qProj: string; kProj: string; vProj: string; rowTable: string; out: string },
  first: number,
  count: number,
  kernel: KernelName | undefined,
): void {
  const { g, slots, capacity } = pipeline;
  const { queryHeads: hq, kvHeads: hkv, headDim: d } = g;
  const width = hq * d * (g.gated ? 2 : 1);
  const geometry = { queryHeads: hq, kvHeads: hkv, headDim: d, slots, capacity };
  const chosen = overrides(kernel);
  const qProj = p[names.qProj]! + bytes(first * width);
  const q = p.q! + bytes(first * hq * d);
  const table = p[names.rowTable]! + BigInt(8 * first);
  attentionPrepare(
    cuda,
    {
      ...geometry,
      qOut: q,
      keys: p.keys!,
      values: p.values!,
      qProj,
      kProj: p[names.kProj]! + bytes(first * hkv * d),
      vProj: p[names.vProj]! + bytes(first * hkv * d),
      qNorm: p.qNorm!,
      kNorm: p.kNorm!,
      rowTable: table,
      rows: count,
      rotaryDims: g.rotaryDims,
      theta: ATTENTION_THETA,
      style: g.style,
      gated: g.gated,
      eps: ATTENTION_EPS,
    },
    { kernel: chosen.prepare },
  );
  const gate = g.gated ? { gate: qProj + bytes(d), gateRowStride: width, gateHeadStride: 2 * d } : {};
  const out = p[names.out]! + bytes(first * hq * d);
  const a = { ...geometry, ...gate, out, q, keys: p.keys!, values: p.values!, rowTable: table };
  attention(cuda, { ...a, rows: count, workspace: p.workspace! }, { kernel: chosen.attention });
}

const PREFILL_ROWS = 257;
const NEIGHBOURS = 6;

function prefillEquivalence(g: AttentionGeometry, start: number): EquivalenceCase {
  const { queryHeads: hq, kvHeads: hkv, headDim: d } = g;
  const pipeline: Pipeline = { g, slots: 2, capacity: start + PREFILL_ROWS + 1 };
  const slabCount = pipeline.slots * pipeline.capacity * hkv * d;
  const names = { qProj: 'qProj', kProj: 'kProj', vProj: 'vProj', rowTable: 'rowTable', out: 'out' };
  return {
    label: `attention ${g.label}: prefill of ${PREFILL_ROWS} rows from position ${start}, whole and in chunks`,
    prepare(random) {
      const width = hq * d * (g.gated ? 2 : 1);
      const rows = sequenceRows(1, start, PREFILL_ROWS);
      const filled = [start + 5, start];
      const geometry = { queryHeads: hq, kvHeads: hkv, headDim: d, ...pipeline };
      const inputs = {
        qProj: randomBf16(random, PREFILL_ROWS * width, 1),
        kProj: randomBf16(random, PREFILL_ROWS * hkv * d, 1),
        vProj: randomBf16(random, PREFILL_ROWS * hkv * d, 1),
        qNorm: randomBf16(random, d, 0.1),
        kNorm: randomBf16(random, d, 0.1),
        rowTable: rowTable(rows),
        initialKeys: historySlab(random, g, pipeline.capacity, filled),
        initialValues: historySlab(random, g, pipeline.capacity, filled),
        workspace: new Float32Array(attentionWorkspaceBytes(64, geometry) / 4),
      };
      const chunked = (size: number) => (cuda: CudaContext, p: Pointers, kernel: KernelName | undefined) => {
        cuda.driver.copyDeviceToDevice(p.keys!, p.initialKeys!, slabCount * 2, cuda.stream);
        cuda.driver.copyDeviceToDevice(p.values!, p.initialValues!, slabCount * 2, cuda.stream);
        for (let first = 0; first < PREFILL_ROWS; first += size) {
          runRows(cuda, pipeline, p, names, first, Math.min(size, PREFILL_ROWS - first), kernel);
        }
      };
      return {
        inputs,
        outputs: [
          { name: 'out', kind: 'bf16', count: PREFILL_ROWS * hq * d },
          { name: 'q', kind: 'bf16', count: PREFILL_ROWS * hq * d },
          { name: 'keys', kind: 'bf16', count: slabCount },
          { name: 'values', kind: 'bf16', count: slabCount },
        ],
        runs: {
          whole: chunked(PREFILL_ROWS),
          'chunks of 1': chunked(1),
          'chunks of 7': chunked(7),
          'chunks of 64': chunked(64),
          'chunks of 66': chunked(66),
        },
      };
    },
  };
}

/**
 * Lane 0 (slot 0) prefills T rows; neighbours at slots 1..6 (positions around and past split points) take one
 * decode row each. Run "prefill whole": lane 0's T rows in one call, then the neighbours' decode step alone. Run
 * "decode beside neighbours": T − 1 rows, then one decode step of the neighbours with lane 0's last row third.
 */
function decodeEquivalence(g: AttentionGeometry): EquivalenceCase {
  const { queryHeads: hq, kvHeads: hkv, headDim: d } = g;
  const neighbourPositions = [3, 1023, 1024, 2047, 2049, 3000];
  const pipeline: Pipeline = { g, slots: NEIGHBOURS + 1, capacity: 3072 };
  const slabCount = pipeline.slots * pipeline.capacity * hkv * d;
  const width = hq * d * (g.gated ? 2 : 1);
  const start = 2000;
  const total = start + PREFILL_ROWS;
  return {
    label: `attention ${g.label}: a lane's decode row beside ${NEIGHBOURS} lanes = the last row of its prefill`,
    prepare(random) {
      const lane = sequenceRows(0, start, PREFILL_ROWS);
      const filled = [start, ...neighbourPositions];
      const qProj = randomBf16(random, (PREFILL_ROWS + NEIGHBOURS) * width, 1);
      const kProj = randomBf16(random, (PREFILL_ROWS + NEIGHBOURS) * hkv * d, 1);
      const vProj = randomBf16(random, (PREFILL_ROWS + NEIGHBOURS) * hkv * d, 1);
      // The decode step's rows: neighbours 0 and 1, lane 0's last row, neighbours 2..5.
      const order = [PREFILL_ROWS, PREFILL_ROWS + 1, PREFILL_ROWS - 1, ...[2, 3, 4, 5].map((n) => PREFILL_ROWS + n)];
      const gather = (source: Uint16Array, rowWidth: number) => {
        const out = new Uint16Array(order.length * rowWidth);
        order.forEach((row, index) => {
          out.set(source.subarray(row * rowWidth, (row + 1) * rowWidth), index * rowWidth);
        });
        return { bits: out, values: new Float64Array(0) } satisfies Bf16Tensor;
      };
      const stepRows: CallRows = {
        slots: Int32Array.from(order, (row) => (row < PREFILL_ROWS ? 0 : row - PREFILL_ROWS + 1)),
        positions: Int32Array.from(order, (row) =>
          row < PREFILL_ROWS ? total - 1 : neighbourPositions[row - PREFILL_ROWS]!,
        ),
      };
      const prefillTable = rowTable(lane);
      const geometry = { queryHeads: hq, kvHeads: hkv, headDim: d, ...pipeline };
      const inputs = {
        qProj,
        kProj,
        vProj,
        stepQProj: gather(qProj.bits, width),
        stepKProj: gather(kProj.bits, hkv * d),
        stepVProj: gather(vProj.bits, hkv * d),
        qNorm: randomBf16(random, d, 0.1),
        kNorm: randomBf16(random, d, 0.1),
        prefillTable,
        stepTable: rowTable(stepRows),
        initialKeys: historySlab(random, g, pipeline.capacity, filled),
        initialValues: historySlab(random, g, pipeline.capacity, filled),
        stepOut: scratchBf16(order.length * hq * d),
        stepQ: scratchBf16(order.length * hq * d),
        workspace: new Float32Array(attentionWorkspaceBytes(64, geometry) / 4),
      };
      const headRow = hq * d;
      const reset = (cuda: CudaContext, p: Pointers) => {
        cuda.driver.copyDeviceToDevice(p.keys!, p.initialKeys!, slabCount * 2, cuda.stream);
        cuda.driver.copyDeviceToDevice(p.values!, p.initialValues!, slabCount * 2, cuda.stream);
      };
      const laneNames = { qProj: 'qProj', kProj: 'kProj', vProj: 'vProj', rowTable: 'prefillTable', out: 'out' };
      const stepNames = {
        qProj: 'stepQProj',
        kProj: 'stepKProj',
        vProj: 'stepVProj',
        rowTable: 'stepTable',
        out: 'stepOut',
      };
      const copyRow = (cuda: CudaContext, target: bigint, source: bigint) =>
        cuda.driver.copyDeviceToDevice(target, source, headRow * 2, cuda.stream);
      return {
        inputs,
        outputs: [
          { name: 'out', kind: 'bf16', count: PREFILL_ROWS * headRow },
          { name: 'neighbours', kind: 'bf16', count: NEIGHBOURS * headRow },
          { name: 'q', kind: 'bf16', count: PREFILL_ROWS * headRow },
          { name: 'keys', kind: 'bf16', count: slabCount },
          { name: 'values', kind: 'bf16', count: slabCount },
        ],
        runs: {
          'prefill whole': (cuda, p, kernel) => {
            reset(cuda, p);
            runRows(cuda, pipeline, p, laneNames, 0, PREFILL_ROWS, kernel);
            // The neighbours alone, one decode call each, at their places in the step's inputs.
            order.forEach((row, index) => {
              if (row < PREFILL_ROWS) return;
              runRows(cuda, pipeline, { ...p, q: p.stepQ! }, stepNames, index, 1, kernel);
              copyRow(cuda, p.neighbours! + bytes((row - PREFILL_ROWS) * headRow), p.stepOut! + bytes(index * headRow));
            });
          },
          'decode beside neighbours': (cuda, p, kernel) => {
            reset(cuda, p);
            runRows(cuda, pipeline, p, laneNames, 0, PREFILL_ROWS - 1, kernel);
            runRows(cuda, pipeline, { ...p, q: p.stepQ! }, stepNames, 0, order.length, kernel);
            order.forEach((row, index) => {
              const source = p.stepOut! + bytes(index * headRow);
              if (row < PREFILL_ROWS) {
                copyRow(cuda, p.out! + bytes(row * headRow), source);
                copyRow(cuda, p.q! + bytes(row * headRow), p.stepQ! + bytes(index * headRow));
              } else {
                copyRow(cuda, p.neighbours! + bytes((row - PREFILL_ROWS) * headRow), source);
              }
            });
          },
        },
      };
    },
  };
}

const HEADS_LANES = 7;
/** The lanes' positions: inside a first split, at and past split points, several splits in. */
const HEADS_POSITIONS = [3, 255, 256, 700, 1023, 1024, 2049];

/**
 * A decode call of 7 lanes with each KV head's query heads walked by one block of the whole group (the first run),
 * then by blocks of fewer heads (each divisor of the group): every warp walks its own head, so the bytes are the same.
 */
function headsPerBlockEquivalence(g: AttentionGeometry): EquivalenceCase {
  const { queryHeads: hq, kvHeads: hkv, headDim: d } = g;
  const group = hq / hkv;
  const geometry = { queryHeads: hq, kvHeads: hkv, headDim: d, slots: INVARIANCE_SLOTS, capacity: INVARIANCE_CAPACITY };
  return {
    label: `attention ${g.label}: ${HEADS_LANES} decode lanes, each KV head's query heads in 1 to ${group} blocks`,
    prepare(random) {
      const prepared = lanesOverHistories(random, g, INVARIANCE_SLOTS, INVARIANCE_CAPACITY, HEADS_LANES, (lane) => [
        lane % INVARIANCE_SLOTS,
        HEADS_POSITIONS[lane]!,
      ]);
      const walk = (headsPerBlock: number) => (cuda: CudaContext, p: Pointers, kernel: KernelName | undefined) => {
        const gate = g.gated ? { gate: p.gate! } : {};
        const buffers = { out: p.out!, q: p.q!, keys: p.keys!, values: p.values!, rowTable: p.rowTable! };
        const a = { ...geometry, ...gate, ...buffers, rows: HEADS_LANES, workspace: p.workspace!, headsPerBlock };
        attention(cuda, a, { kernel });
      };
      const divisors = Array.from({ length: group }, (_, index) => group - index).filter((h) => group % h === 0);
      const runs = Object.fromEntries(
        divisors.map((heads) => [`${heads} head${heads > 1 ? 's' : ''} a block`, walk(heads)]),
      );
      return { inputs: prepared.inputs, outputs: prepared.outputs, runs };
    },
  };
}

export const attentionInvariance: readonly InvarianceCase[] = [
  invarianceCase(BACKBONE),
  invarianceCase(TOWER),
  runInvarianceCase(BACKBONE),
];

/** The two walks of the few-rows kernel's shared form (run on the real kernels only: the controls' runs stay short). */
export const attentionSharedCallInvariance: readonly InvarianceCase[] = [
  longSlabInvarianceCase(BACKBONE, false),
  longSlabInvarianceCase(BACKBONE, true),
];

export const attentionEquivalences: readonly EquivalenceCase[] = [
  prefillEquivalence(BACKBONE, 0),
  prefillEquivalence(BACKBONE, 1000),
  prefillEquivalence(TOWER, 0),
  decodeEquivalence(BACKBONE),
  // The whole call's first group of 4 rows straddles the split point (and tile boundary) at 2048, or at 8192.
  prefillEquivalence(BACKBONE, 2046),
  prefillEquivalence(BACKBONE, 8190),
  headsPerBlockEquivalence(BACKBONE),
  headsPerBlockEquivalence(TOWER),
];

/** An invariance case's call: `count` rows of `rows` over the slabs, each row's q and gate, its output compared by bits. */
function invariancePrepared(
  g: AttentionGeometry,
  geometry: { queryHeads: number; kvHeads: number; headDim: number; slots: number; capacity: number },
  count: number,
  drawn: {
    rows: CallRows;
    qRows: Uint16Array;
    gateRows: Uint16Array;
    keys: Prepared['inputs'][string];
    values: Prepared['inputs'][string];
  },
): Prepared {
  const workspace = new Float32Array(Math.max(1, attentionWorkspaceBytes(count, geometry) / 4));
  return {
    inputs: {
      q: { bits: drawn.qRows, values: new Float64Array(0) },
      gate: { bits: drawn.gateRows, values: new Float64Array(0) },
      keys: drawn.keys,
      values: drawn.values,
      rowTable: rowTable(drawn.rows),
      workspace,
    },
    outputs: [{ name: 'out', kind: 'bf16', count: count * geometry.queryHeads * geometry.headDim }],
    reference() {
      throw new Error('invariance cases compare bits between calls, not against a reference');
    },
    run(cuda, p, kernel) {
      const gate = g.gated ? { gate: p.gate! } : {};
      const a = { ...geometry, ...gate, out: p.out!, q: p.q!, keys: p.keys!, values: p.values! };
      attention(cuda, { ...a, rowTable: p.rowTable!, rows: count, workspace: p.workspace! }, { kernel });
    },
  };
}
