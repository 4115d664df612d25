// Contract cases for the codec's windowed transformer kernels (kernels/cuda/codec_transformer.cu) against the cpu
// transformer's own arithmetic: RoPE, the windowed attention and its ring (transformer.ts
// line by line). Real geometry (16 heads × 64, window 128) and small odd ones; lanes at scattered slots, starts past the
// window and past the RoPE table. RMSNorm and SwiGLU are codecTransformerRowCases.ts; the streamed composition (RoPE,
// attention, ring update per chunk) is codecTransformerStreamCases.ts.
import {
  codecRingUpdate,
  codecRope,
  codecRopeFrequencies,
  codecWindowAttention,
} from '../../../src/backend/cuda/ops/codecTransformer.ts';
import { type AttentionGeometry, attendRows, ropeRows } from '../../../src/codec/transformer.ts';
import { widen } from './codecCases.ts';
import type { InvarianceCase, KernelCase, Prepared, ShapeCase } from './contract.ts';
import { copySlab } from './deltaNetCases.ts';
import { type Random, randomFloat32, streamOf } from './random.ts';
import { rotatedPairMagnitudes } from './ulps.ts';

export const REAL_GEOMETRY: AttentionGeometry = { heads: 16, headDim: 64, window: 128, ropeBase: 10000 };
export const ODD_GEOMETRY: AttentionGeometry = { heads: 3, headDim: 6, window: 5, ropeBase: 500 };

/**
 * The fp64 steps match the cpu's one for one; what is left is the fp64 sum of squares in a fixed tree (the cpu's
 * runs ascending) and the device's exp (1 ulp of fp64): the one fp32 rounding may land one ulp apart, rarely.
 */
export const ONE_ROUNDING_BOUND = 1e-7;
export const ONE_ROUNDING_ULPS = 1;
/** A device cos/sin one fp64 ulp off can round cos or sin to the next fp32: ≤ ½ ulp at the pair's norm, plus ½. */
export const ROPE_ULPS = 2;

/** A lane of a call: its slot, rows and start position, in table units. */
export type TransformerLane = readonly [slot: number, units: number, start: number];

export function transformerTable(lanes: readonly TransformerLane[]): { table: Int32Array; firsts: number[] } {
  const table = new Int32Array(lanes.length * 4);
  const firsts: number[] = [];
  let row = 0;
  lanes.forEach(([slot, units, start], index) => {
    table.set([slot, row, units, start], index * 4);
    firsts.push(row);
    row += units;
  });
  return { table, firsts };
}

export const unitsOf = (lanes: readonly TransformerLane[]) => lanes.reduce((sum, [, units]) => sum + units, 0);
export const longestOf = (lanes: readonly TransformerLane[]) => Math.max(...lanes.map(([, units]) => units));

/** f64 values uploaded as their raw bytes (the contract's inputs are fp32, int32 or bf16 arrays). */
export function rawFloat64(values: Float64Array): Float32Array {
  return new Float32Array(values.buffer, values.byteOffset, values.length * 2);
}

/** A checkpoint-like RoPE table: (cos θ, sin θ) in fp32 at angles unrelated to the computed ones. */
function ropeTable(random: Random, positions: number, headDim: number): Float32Array {
  const table = new Float32Array(positions * headDim);
  for (let index = 0; index < table.length; index += 2) {
    const angle = 2 * Math.PI * random.next();
    table[index] = Math.cos(angle);
    table[index + 1] = Math.sin(angle);
  }
  return table;
}

interface LanesOf {
  readonly geometry: AttentionGeometry;
  readonly rowScale: number;
  readonly slots: number;
  readonly lanes: readonly TransformerLane[];
}

/** The call's sizes for the launchers. */
function callOf(lanesOf: LanesOf, table: bigint) {
  const { heads, headDim } = lanesOf.geometry;
  return {
    sequences: table,
    sequenceCount: lanesOf.lanes.length,
    longestSequence: longestOf(lanesOf.lanes),
    rowScale: lanesOf.rowScale,
    heads,
    headDim,
  };
}

/** Each lane's rows in the buffers and its start position, at the layer's rows per unit. */
function laneRows(lanesOf: LanesOf) {
  const { firsts } = transformerTable(lanesOf.lanes);
  return lanesOf.lanes.map(([slot, units, start], index) => ({
    slot,
    first: firsts[index]! * lanesOf.rowScale,
    rows: units * lanesOf.rowScale,
    start: start * lanesOf.rowScale,
  }));
}

function ropePrepared(lanesOf: LanesOf, tablePositions: number, random: Random, nonFinite: boolean): Prepared {
  const { geometry, rowScale } = lanesOf;
  const width = geometry.heads * geometry.headDim;
  const rows = unitsOf(lanesOf.lanes) * rowScale;
  const qkvIn = randomFloat32(random, rows * 3 * width, 1);
  const table = tablePositions > 0 ? ropeTable(random, tablePositions, geometry.headDim) : undefined;
  if (nonFinite) {
    qkvIn[1] = Number.NaN;
    qkvIn[width + 2] = Number.POSITIVE_INFINITY;
    qkvIn[(rows - 1) * 3 * width + 4] = Number.NEGATIVE_INFINITY;
  }
  const frequencies = rawFloat64(codecRopeFrequencies(geometry.ropeBase, geometry.headDim));
  return {
    inputs: { qkvIn, frequencies, ...(table ? { table } : {}), sequences: transformerTable(lanesOf.lanes).table },
    outputs: [
      {
        name: 'qkv',
        kind: 'f32',
        count: rows * 3 * width,
        ulpMagnitudes: (expected) => rotatedPairMagnitudes(expected, geometry.headDim, geometry.headDim, 'interleaved'),
      },
    ],
    reference: () => {
      const qkv = Float32Array.from(qkvIn);
      for (const lane of laneRows(lanesOf)) ropeRows(qkv, lane.first, lane.rows, lane.start, geometry, table);
      return { qkv: widen(qkv) };
    },
    run(cuda, p, kernel) {
      copySlab(cuda, p.qkv!, p.qkvIn!, qkvIn.length * 4);
      const call = callOf(lanesOf, p.sequences!);
      codecRope(
        cuda,
        { ...call, qkv: p.qkv!, frequencies: p.frequencies!, table: p.table, tablePositions },
        { kernel },
      );
    },
  };
}

function ropeShape(label: string, lanesOf: LanesOf, tablePositions: number): ShapeCase {
  const { heads, headDim } = lanesOf.geometry;
  return {
    label: `${label} [${heads} × ${headDim}, table of ${tablePositions}, starts ${lanesOf.lanes.map((l) => l[2])}]`,
    prepare: (random, nonFinite) => ropePrepared(lanesOf, tablePositions, random, nonFinite),
  };
}

export const codecTransformerRopeCase: KernelCase = {
  name: 'codec transformer RoPE (interleaved, absolute positions, checkpoint table)',
  bound: ONE_ROUNDING_BOUND,
  ulps: ROPE_ULPS,
  shapes: [
    ropeShape(
      'lanes across the table end, real',
      {
        geometry: REAL_GEOMETRY,
        rowScale: 1,
        slots: 3,
        lanes: [
          [2, 80, 60],
          [0, 3, 5000],
        ],
      },
      100,
    ),
    ropeShape(
      'no table, far positions, real',
      {
        geometry: REAL_GEOMETRY,
        rowScale: 1,
        slots: 3,
        lanes: [
          [1, 20, 0],
          [0, 2, 100000],
          [2, 5, 1000],
        ],
      },
      0,
    ),
    ropeShape(
      'odd, 3 rows per unit',
      {
        geometry: ODD_GEOMETRY,
        rowScale: 3,
        slots: 4,
        lanes: [
          [3, 4, 1],
          [1, 2, 9],
        ],
      },
      7,
    ),
  ],
};

function attentionInputs(lanesOf: LanesOf, draw: (index: number) => Random) {
  const { geometry, slots } = lanesOf;
  const width = geometry.heads * geometry.headDim;
  const rows = unitsOf(lanesOf.lanes) * lanesOf.rowScale;
  return {
    keys: randomFloat32(draw(0), slots * geometry.window * width, 1),
    values: randomFloat32(draw(1), slots * geometry.window * width, 1),
    qkv: randomFloat32(draw(2), rows * 3 * width, 1),
  };
}

/** Every lane through the cpu attend from its slot's ring: the outputs and the rings after. */
export function attentionReference(lanesOf: LanesOf, qkv: Float32Array, keys: Float32Array, values: Float32Array) {
  const { geometry } = lanesOf;
  const width = geometry.heads * geometry.headDim;
  const ringSize = geometry.window * width;
  const out = new Float32Array((qkv.length / 3) | 0);
  const keysAfter = Float32Array.from(keys);
  const valuesAfter = Float32Array.from(values);
  for (const lane of laneRows(lanesOf)) {
    const ringKeys = keysAfter.subarray(lane.slot * ringSize, (lane.slot + 1) * ringSize);
    const ringValues = valuesAfter.subarray(lane.slot * ringSize, (lane.slot + 1) * ringSize);
    attendRows(out, qkv, lane.first, lane.rows, lane.start, ringKeys, ringValues, geometry);
  }
  return { out, keys: keysAfter, values: valuesAfter };
}

function attentionPrepared(lanesOf: LanesOf, draw: (index: number) => Random, nonFinite: boolean): Prepared {
  const { geometry } = lanesOf;
  const width = geometry.heads * geometry.headDim;
  const rows = unitsOf(lanesOf.lanes) * lanesOf.rowScale;
  const { keys, values, qkv } = attentionInputs(lanesOf, draw);
  if (nonFinite) {
    qkv[3] = Number.NaN;
    qkv[(rows - 1) * 3 * width + width + geometry.headDim + 1] = Number.POSITIVE_INFINITY;
    values[lanesOf.lanes[0]![0] * geometry.window * width + 2] = Number.NaN;
  }
  return {
    inputs: { qkv, keys, values, sequences: transformerTable(lanesOf.lanes).table },
    outputs: [{ name: 'out', kind: 'f32', count: rows * width }],
    reference: () => ({ out: widen(attentionReference(lanesOf, qkv, keys, values).out) }),
    run(cuda, p, kernel) {
      const call = { ...callOf(lanesOf, p.sequences!), window: geometry.window };
      codecWindowAttention(cuda, { ...call, out: p.out!, qkv: p.qkv!, keys: p.keys!, values: p.values! }, { kernel });
    },
  };
}

function attentionShape(label: string, lanesOf: LanesOf): ShapeCase {
  const { heads, headDim, window } = lanesOf.geometry;
  const lanes = lanesOf.lanes.map(([slot, units, start]) => `${units}@${start} slot ${slot}`).join(', ');
  return {
    label: `${label} [${heads} × ${headDim}, window ${window}, ${lanesOf.rowScale} rows per unit: ${lanes}]`,
    prepare: (random, nonFinite) => attentionPrepared(lanesOf, () => random, nonFinite),
  };
}

const real = (slots: number, lanes: readonly TransformerLane[]): LanesOf => ({
  geometry: REAL_GEOMETRY,
  rowScale: 1,
  slots,
  lanes,
});

/** Decode lanes: lane i at slot i, one row at its own start (most past the window, so the ring is read). */
const decodeLanes = (count: number): TransformerLane[] =>
  Array.from({ length: count }, (_, lane) => [lane, 1, (lane * 37) % 300] as const);

const attentionInvariance: InvarianceCase = {
  label: 'decode lanes at their own starts, real',
  // Each lane brings its own 1 MiB ring: 129 lanes rather than 257 keep the inputs small.
  rowCounts: [1, 2, 7, 64, 129],
  prepare: (seed, count) => attentionPrepared(real(count, decodeLanes(count)), (index) => streamOf(seed, index), false),
  elementsPerRow: { out: REAL_GEOMETRY.heads * REAL_GEOMETRY.headDim },
};

export const codecTransformerAttentionCase: KernelCase = {
  name: 'codec transformer window attention over its ring (fp64 softmax)',
  bound: ONE_ROUNDING_BOUND,
  ulps: ONE_ROUNDING_ULPS,
  shapes: [
    attentionShape('fresh lane past the window, real', real(2, [[1, 200, 0]])),
    attentionShape('window over ring and call, real', real(2, [[0, 40, 300]])),
    attentionShape('far past the window, real', real(1, [[0, 5, 1000]])),
    attentionShape(
      'lanes at different starts, real',
      real(4, [
        [2, 7, 0],
        [0, 3, 130],
        [3, 1, 1000],
        [1, 20, 50],
      ]),
    ),
    // The encoder's window, and a head past 64 columns (two a thread): 16-row blocks across the ring and the call.
    attentionShape('encoder window over ring and call', {
      geometry: { ...REAL_GEOMETRY, heads: 2, window: 512 },
      rowScale: 1,
      slots: 2,
      lanes: [
        [1, 21, 600],
        [0, 35, 0],
      ],
    }),
    attentionShape('wide head over ring and call', {
      geometry: { heads: 2, headDim: 96, window: 70, ropeBase: 10000 },
      rowScale: 1,
      slots: 2,
      lanes: [
        [1, 37, 100],
        [0, 18, 0],
      ],
    }),
    attentionShape('odd, 2 rows per unit', {
      geometry: ODD_GEOMETRY,
      rowScale: 2,
      slots: 3,
      lanes: [
        [2, 4, 0],
        [0, 3, 2],
        [1, 1, 40],
      ],
    }),
  ],
  invariance: [attentionInvariance],
};

function ringPrepared(lanesOf: LanesOf, random: Random, nonFinite: boolean): Prepared {
  const { geometry } = lanesOf;
  const width = geometry.heads * geometry.headDim;
  const { keys, values, qkv } = attentionInputs(lanesOf, () => random);
  if (nonFinite) {
    qkv[width + 1] = Number.NaN;
    qkv[2 * width + 3] = Number.NEGATIVE_INFINITY;
  }
  return {
    inputs: { qkv, keysIn: keys, valuesIn: values, sequences: transformerTable(lanesOf.lanes).table },
    outputs: [
      { name: 'keys', kind: 'f32', count: keys.length },
      { name: 'values', kind: 'f32', count: values.length },
    ],
    reference: () => {
      const after = attentionReference(lanesOf, qkv, keys, values);
      return { keys: widen(after.keys), values: widen(after.values) };
    },
    run(cuda, p, kernel) {
      copySlab(cuda, p.keys!, p.keysIn!, keys.length * 4);
      copySlab(cuda, p.values!, p.valuesIn!, values.length * 4);
      const call = { ...callOf(lanesOf, p.sequences!), window: geometry.window };
      codecRingUpdate(cuda, { ...call, keys: p.keys!, values: p.values!, qkv: p.qkv! }, { kernel });
    },
  };
}

function ringShape(label: string, lanesOf: LanesOf): ShapeCase {
  const lanes = lanesOf.lanes.map(([slot, units, start]) => `${units}@${start} slot ${slot}`).join(', ');
  return { label: `${label} [${lanes}]`, prepare: (random, nonFinite) => ringPrepared(lanesOf, random, nonFinite) };
}

export const codecTransformerRingCase: KernelCase = {
  name: 'codec transformer ring update (copies, exact)',
  bound: 0,
  ulps: 0,
  shapes: [
    ringShape(
      'short, long and far lanes, real',
      real(3, [
        [1, 5, 0],
        [0, 200, 126],
        [2, 1, 1000],
      ]),
    ),
    ringShape('odd, 2 rows per unit', {
      geometry: ODD_GEOMETRY,
      rowScale: 2,
      slots: 3,
      lanes: [
        [2, 1, 0],
        [0, 4, 3],
      ],
    }),
  ],
};
