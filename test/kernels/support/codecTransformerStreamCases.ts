// Contract case for the codec transformer's attention as a stream (kernels/cuda/codec_transformer.cu): RoPE in place,
// the windowed attention over this call and the ring, then the ring update, per call. Its accuracy shape holds lanes
// against the cpu transformer's ropeRows and attendRows (transformer.ts); its equivalences hold one lane
// whole and in chunks of 1, 4, 32 and irregular rows (each chunk a call from the ring the previous one left), and
// lanes together and alone, bit for bit. In one head of the equivalences q is zero (a uniform softmax) and v holds
// ±2⁴⁸ at alternate positions: their fp64 sum cancels, so the order in which the keys are summed shows in fp32.
import type { CudaContext } from '../../../src/backend/cuda/context.ts';
import {
  codecRingUpdate,
  codecRope,
  codecRopeFrequencies,
  codecWindowAttention,
} from '../../../src/backend/cuda/ops/codecTransformer.ts';
import type { KernelName } from '../../../src/backend/cuda/ops/launch.ts';
import { type AttentionGeometry, ropeRows } from '../../../src/codec/transformer.ts';
import { widen } from './codecCases.ts';
import {
  attentionReference,
  longestOf,
  ODD_GEOMETRY,
  ONE_ROUNDING_BOUND,
  REAL_GEOMETRY,
  ROPE_ULPS,
  rawFloat64,
  type TransformerLane,
  transformerTable,
  unitsOf,
} from './codecTransformerCases.ts';
import type { EquivalenceCase, KernelCase, OutputSpec, Prepared } from './contract.ts';
import { copySlab } from './deltaNetCases.ts';
import { type Random, randomFloat32 } from './random.ts';
import { rotatedPairMagnitudes } from './ulps.ts';

const CANCELLING = 2 ** 48;

type Pointers = Readonly<Record<string, bigint>>;
type Schedule = (cuda: CudaContext, p: Pointers, kernel: KernelName | undefined) => void;

/** Which launch a control replaces (the others run the real kernels). */
function kernelsFor(kernel: KernelName | undefined) {
  const name = kernel?.name ?? '';
  const pick = (part: string) => (name.includes(part) ? kernel : undefined);
  return { rope: pick('rope'), attention: pick('attention'), ring: pick('ring') };
}

/** One call of `lanes` (table at `table`): RoPE in place on qkv, the attention into out, then the ring update. */
function runStream(
  cuda: CudaContext,
  p: Pointers,
  kernel: KernelName | undefined,
  geometry: AttentionGeometry,
  table: bigint,
  lanes: readonly TransformerLane[],
): void {
  const kernels = kernelsFor(kernel);
  const { heads, headDim, window } = geometry;
  const call = { sequences: table, sequenceCount: lanes.length, longestSequence: longestOf(lanes), rowScale: 1 };
  const shape = { ...call, heads, headDim };
  codecRope(cuda, { ...shape, qkv: p.qkv!, frequencies: p.frequencies!, tablePositions: 0 }, { kernel: kernels.rope });
  const ring = { keys: p.keys!, values: p.values!, window };
  codecWindowAttention(cuda, { ...shape, ...ring, out: p.out!, qkv: p.qkv! }, { kernel: kernels.attention });
  codecRingUpdate(cuda, { ...shape, ...ring, qkv: p.qkv! }, { kernel: kernels.ring });
}

function streamInputs(geometry: AttentionGeometry, slots: number, rows: number, random: Random) {
  const width = geometry.heads * geometry.headDim;
  return {
    qkvIn: randomFloat32(random, rows * 3 * width, 1),
    keysIn: randomFloat32(random, slots * geometry.window * width, 1),
    valuesIn: randomFloat32(random, slots * geometry.window * width, 1),
    frequencies: rawFloat64(codecRopeFrequencies(geometry.ropeBase, geometry.headDim)),
  };
}

type StreamInputs = ReturnType<typeof streamInputs>;

/** Head 0: q = 0 in every row, v = +2⁴⁸ at positions ≡ 1 and −2⁴⁸ at ≡ 3 (mod 4), in the call's rows and the rings. */
function plantCancelling(inputs: StreamInputs, geometry: AttentionGeometry, lanes: readonly TransformerLane[]) {
  const { headDim, window } = geometry;
  const width = geometry.heads * headDim;
  const sign = (position: number) => (position % 4 === 1 ? 1 : position % 4 === 3 ? -1 : 0);
  const { firsts } = transformerTable(lanes);
  lanes.forEach(([, units, start], index) => {
    for (let row = 0; row < units; row++) {
      const base = (firsts[index]! + row) * 3 * width;
      inputs.qkvIn.fill(0, base, base + headDim);
      const value = sign(start + row) * CANCELLING;
      if (value !== 0) inputs.qkvIn.fill(value, base + 2 * width, base + 2 * width + headDim);
    }
  });
  // Window is a multiple of 4 here, so ring row i holds a position ≡ i (mod 4).
  for (let ringRow = 0; ringRow < inputs.valuesIn.length / width; ringRow++) {
    const value = sign(ringRow % window) * CANCELLING;
    if (value !== 0) inputs.valuesIn.fill(value, ringRow * width, ringRow * width + headDim);
  }
}

function streamOutputs(geometry: AttentionGeometry, slots: number, rows: number): OutputSpec[] {
  const width = geometry.heads * geometry.headDim;
  const ring = slots * geometry.window * width;
  return [
    { name: 'out', kind: 'f32', count: rows * width },
    {
      name: 'qkv',
      kind: 'f32',
      count: rows * 3 * width,
      ulpMagnitudes: (expected) => rotatedPairMagnitudes(expected, geometry.headDim, geometry.headDim, 'interleaved'),
    },
    { name: 'keys', kind: 'f32', count: ring },
    { name: 'values', kind: 'f32', count: ring },
  ];
}

function copyInputs(cuda: CudaContext, p: Pointers, inputs: StreamInputs): void {
  copySlab(cuda, p.qkv!, p.qkvIn!, inputs.qkvIn.length * 4);
  copySlab(cuda, p.keys!, p.keysIn!, inputs.keysIn.length * 4);
  copySlab(cuda, p.values!, p.valuesIn!, inputs.valuesIn.length * 4);
}

/** Lanes in one call against the cpu's applyRope and attend: every buffer the launches write. */
function lanesPrepared(lanes: readonly TransformerLane[], slots: number, random: Random, nonFinite: boolean): Prepared {
  const geometry = REAL_GEOMETRY;
  const width = geometry.heads * geometry.headDim;
  const rows = unitsOf(lanes);
  const inputs = streamInputs(geometry, slots, rows, random);
  if (nonFinite) {
    inputs.qkvIn[5] = Number.NaN;
    inputs.qkvIn[(rows - 1) * 3 * width + width + 7] = Number.NEGATIVE_INFINITY;
  }
  const { table, firsts } = transformerTable(lanes);
  return {
    inputs: { ...inputs, sequences: table },
    outputs: streamOutputs(geometry, slots, rows),
    reference: () => {
      const qkv = Float32Array.from(inputs.qkvIn);
      lanes.forEach(([, units, start], index) => {
        ropeRows(qkv, firsts[index]!, units, start, geometry, undefined);
      });
      const lanesOf = { geometry, rowScale: 1, slots, lanes };
      const after = attentionReference(lanesOf, qkv, inputs.keysIn, inputs.valuesIn);
      return { out: widen(after.out), qkv: widen(qkv), keys: widen(after.keys), values: widen(after.values) };
    },
    run(cuda, p, kernel) {
      copyInputs(cuda, p, inputs);
      runStream(cuda, p, kernel, geometry, p.sequences!, lanes);
    },
  };
}

/** Calls of consecutive entries of the named tables, from the same starting buffers. */
function equivalence(
  label: string,
  geometry: AttentionGeometry,
  slots: number,
  rows: number,
  tables: Record<string, readonly TransformerLane[]>,
  calls: Record<string, readonly (readonly [table: string, entry: number, count: number])[]>,
): EquivalenceCase {
  return {
    label,
    prepare(random) {
      const inputs = streamInputs(geometry, slots, rows, random);
      plantCancelling(inputs, geometry, Object.values(tables)[0]!);
      const tableInputs = Object.fromEntries(
        Object.entries(tables).map(([name, lanes]) => [name, transformerTable(lanes).table]),
      );
      const runs: Record<string, Schedule> = {};
      for (const [name, list] of Object.entries(calls)) {
        runs[name] = (cuda, p, kernel) => {
          copyInputs(cuda, p, inputs);
          for (const [table, entry, count] of list) {
            const lanes = tables[table]!.slice(entry, entry + count);
            runStream(cuda, p, kernel, geometry, p[table]! + BigInt(entry * 16), lanes);
          }
        };
      }
      return { inputs: { ...inputs, ...tableInputs }, outputs: streamOutputs(geometry, slots, rows), runs };
    },
  };
}

/** One lane at slot 1 of 3 from `start`, whole and cut into chunks, each chunk a call. */
function chunked(geometry: AttentionGeometry, rows: number, start: number): EquivalenceCase {
  const chunkings: Record<string, readonly number[]> = {
    whole: [rows],
    'chunks of 1': [1],
    'chunks of 4': [4],
    'chunks of 32': [32],
    irregular: [3, 1, 7, 2, 13, 5, 1, 1, 9, 40],
  };
  const tables: Record<string, TransformerLane[]> = {};
  const calls: Record<string, (readonly [string, number, number])[]> = {};
  for (const [name, sizes] of Object.entries(chunkings)) {
    const entries: TransformerLane[] = [];
    for (let done = 0, index = 0; done < rows; index++) {
      const size = Math.min(sizes[index % sizes.length]!, rows - done);
      entries.push([1, size, start + done]);
      done += size;
    }
    tables[name] = entries;
    calls[name] = entries.map((_, index) => [name, index, 1] as const);
  }
  const { heads, headDim, window } = geometry;
  const label = `one lane of ${rows} rows from position ${start} [${heads} × ${headDim}, window ${window}]`;
  return equivalence(label, geometry, 3, rows, tables, calls);
}

const together: TransformerLane[] = [
  [2, 7, 0],
  [0, 1, 500],
  [3, 4, 130],
];

const STREAM_GEOMETRY: AttentionGeometry = { ...ODD_GEOMETRY, heads: 3, headDim: 8, window: 16 };

export const codecTransformerStreamCase: KernelCase = {
  name: 'codec transformer attention stream (RoPE, window attention, ring update per call)',
  bound: ONE_ROUNDING_BOUND,
  // RoPE's bound (at the pair's norm in qkv); the attention of the same rotated rows rounds once.
  ulps: ROPE_ULPS,
  shapes: [
    {
      label: 'a fresh lane of 150 rows and one at 300 over its ring, real',
      prepare: (random, nonFinite) =>
        lanesPrepared(
          [
            [1, 150, 0],
            [0, 20, 300],
          ],
          2,
          random,
          nonFinite,
        ),
    },
  ],
  equivalences: [
    chunked(REAL_GEOMETRY, 300, 200),
    chunked(STREAM_GEOMETRY, 45, 0),
    equivalence(
      'lanes of 7, 1 and 4 rows at slots 2, 0, 3 from 0, 500, 130, real',
      REAL_GEOMETRY,
      4,
      12,
      { lanes: together },
      {
        together: [['lanes', 0, 3]],
        alone: [
          ['lanes', 0, 1],
          ['lanes', 1, 1],
          ['lanes', 2, 1],
        ],
      },
    ),
  ],
};
