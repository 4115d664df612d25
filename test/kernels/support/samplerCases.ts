// Contract cases for kernels/cuda/sampler.cu against src/backend/cpu/ops/sampling.ts: the picks must be EXACTLY the
// cpu sampler's (integer outputs), for `main` with RAS against each lane's window and for codebook columns, over
// lanes with mixed settings (greedy, top-k 0/1/2/30/100, temperatures, top-p 1) so that every path of the kernel runs.
import {
  drawCode,
  drawMain,
  drawScratch,
  type LaneSampling,
  laneSampling,
  RAS_WINDOW,
} from '../../../src/backend/cpu/ops/sampling.ts';
import { LANE_TABLE_STRIDE, sampleCode, sampleMain, writeLaneEntry } from '../../../src/backend/cuda/ops/sampler.ts';
import type { InvarianceCase, KernelCase, Prepared, ShapeCase } from './contract.ts';
import { Random } from './random.ts';

const SEMANTIC = 4096;
const MAIN_CANDIDATES = SEMANTIC + 1;
const CODEBOOK = 1024;

const SETTINGS = [
  { temperature: 1, topP: 0.9, topK: 30, greedy: false },
  { temperature: 0.7, topP: 0.95, topK: 30, greedy: false },
  { temperature: 1, topP: 1, topK: 0, greedy: false },
  { temperature: 1, topP: 1, topK: 1, greedy: false },
  { temperature: 1.3, topP: 1, topK: 2, greedy: false },
  { temperature: 1, topP: 0.8, topK: 100, greedy: false },
  { temperature: 1, topP: 0.9, topK: 30, greedy: true },
] as const;

interface LaneDraw {
  readonly logits: Float32Array;
  readonly sampling: LaneSampling;
  readonly frame: number;
  readonly window: Int32Array;
}

/** One lane's logits (peaked, so RAS and the cut-offs matter), settings, frame and a window holding likely picks. */
function drawLane(random: Random, count: number, lane: number, nonFinite: boolean): LaneDraw {
  const logits = new Float32Array(count);
  const spread = 1 + 3 * random.next();
  for (let i = 0; i < count; i++) logits[i] = spread * random.normal();
  const favourites = Array.from({ length: 6 }, () => random.integer(Math.min(count, SEMANTIC)));
  for (const favourite of favourites) logits[favourite] = logits[favourite]! + 6 + 2 * random.next();
  if (nonFinite && lane % 3 === 1) logits[random.integer(count)] = Number.NaN;
  if (nonFinite && lane % 3 === 2) logits[random.integer(count)] = Number.POSITIVE_INFINITY;
  if (nonFinite && lane % 5 === 4) logits.fill(Number.NEGATIVE_INFINITY);
  const setting = SETTINGS[lane % SETTINGS.length]!;
  const sampling = laneSampling({ seed: random.integer(2 ** 40), ...setting });
  const window = new Int32Array(RAS_WINDOW).fill(-1);
  for (let entry = 0; entry < RAS_WINDOW; entry++) {
    if (random.next() < 0.6) window[entry] = favourites[random.integer(favourites.length)]!;
  }
  return { logits, sampling, frame: random.integer(5000), window };
}

function laneTable(lanes: readonly LaneDraw[]): Int32Array {
  const table = new Int32Array(lanes.length * LANE_TABLE_STRIDE);
  lanes.forEach((lane, b) => {
    writeLaneEntry(table, b, { slot: b, position: 0, frame: lane.frame, sampling: lane.sampling });
  });
  return table;
}

function concatenate(parts: readonly Int32Array[] | readonly Float32Array[]): Float32Array | Int32Array {
  const total = parts.reduce((sum, part) => sum + part.length, 0);
  const out = parts[0] instanceof Float32Array ? new Float32Array(total) : new Int32Array(total);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function prepareMain(lanes: readonly LaneDraw[]): Prepared {
  const count = MAIN_CANDIDATES;
  const windows = concatenate(lanes.map((lane) => lane.window)) as Int32Array;
  return {
    inputs: {
      logits: concatenate(lanes.map((lane) => lane.logits)) as Float32Array,
      laneTable: laneTable(lanes),
      initialWindows: windows,
    },
    outputs: [
      { name: 'chosen', kind: 'i32', count: lanes.length },
      { name: 'windows', kind: 'i32', count: windows.length },
    ],
    reference() {
      const scratch = drawScratch(count);
      const chosen = new Int32Array(lanes.length);
      const after = windows.slice();
      lanes.forEach((lane, b) => {
        chosen[b] = drawMain(
          lane.logits,
          0,
          count,
          SEMANTIC,
          lane.sampling,
          lane.frame,
          after,
          b * RAS_WINDOW,
          scratch,
        );
      });
      return { chosen, windows: after };
    },
    run(cuda, p, kernel) {
      cuda.driver.copyDeviceToDevice(p.windows!, p.initialWindows!, windows.byteLength, cuda.stream);
      sampleMain(
        cuda,
        {
          out: p.chosen!,
          outStride: 1,
          outOffset: 0,
          logits: p.logits!,
          logitsStride: count,
          count,
          semanticCount: SEMANTIC,
          laneTable: p.laneTable!,
          lanes: lanes.length,
          rasWindow: p.windows!,
        },
        { kernel },
      );
    },
  };
}

function prepareCode(lanes: readonly LaneDraw[], column: number): Prepared {
  const count = CODEBOOK;
  const stride = 11;
  return {
    inputs: { logits: concatenate(lanes.map((lane) => lane.logits)) as Float32Array, laneTable: laneTable(lanes) },
    outputs: [{ name: 'codes', kind: 'i32', count: lanes.length * stride }],
    reference() {
      const scratch = drawScratch(count);
      const codes = new Int32Array(lanes.length * stride);
      lanes.forEach((lane, b) => {
        codes[b * stride + column] = drawCode(lane.logits, 0, count, lane.sampling, lane.frame, column, scratch);
      });
      return { codes };
    },
    run(cuda, p, kernel) {
      // Only column `column` of each 11-wide frame is the kernel's: the rest is filled here, as the reference has it.
      cuda.driver.fillWords(p.codes!, 0, lanes.length * stride, cuda.stream);
      sampleCode(
        cuda,
        {
          out: p.codes!,
          outStride: stride,
          outOffset: column,
          logits: p.logits!,
          logitsStride: count,
          count,
          column,
          laneTable: p.laneTable!,
          lanes: lanes.length,
        },
        { kernel },
      );
    },
  };
}

function lanesFor(random: Random, count: number, lanes: number, nonFinite: boolean): LaneDraw[] {
  return Array.from({ length: lanes }, (_, lane) => drawLane(random, count, lane, nonFinite));
}

const mainShapes: ShapeCase[] = [1, 7, 64].map((lanes) => ({
  label: `main, ${lanes} lanes × ${MAIN_CANDIDATES} candidates`,
  prepare: (random: Random, nonFinite: boolean) => prepareMain(lanesFor(random, MAIN_CANDIDATES, lanes, nonFinite)),
}));

const codeShapes: ShapeCase[] = [
  [1, 1],
  [7, 4],
  [64, 9],
].map(([lanes, column]) => ({
  label: `code[${column}], ${lanes} lanes × ${CODEBOOK}`,
  prepare: (random: Random, nonFinite: boolean) => prepareCode(lanesFor(random, CODEBOOK, lanes!, nonFinite), column!),
}));

/** Lane r's draw depends only on (seed, r), so the first r lanes are the same in calls of any size. */
function invariantLanes(seed: number, rows: number, count: number): LaneDraw[] {
  return Array.from({ length: rows }, (_, lane) => drawLane(new Random(seed * 7919 + lane), count, lane, false));
}

const mainInvariance: InvarianceCase = {
  label: 'main: a lane alone and beside 1, 6, 63, 256 others',
  prepare: (seed, rows) => prepareMain(invariantLanes(seed, rows, MAIN_CANDIDATES)),
  elementsPerRow: { chosen: 1, windows: RAS_WINDOW },
};

const codeInvariance: InvarianceCase = {
  label: 'code[5]: a lane alone and beside others',
  prepare: (seed, rows) => prepareCode(invariantLanes(seed, rows, CODEBOOK), 5),
  elementsPerRow: { codes: 11 },
};

export const sampleMainCase: KernelCase = {
  name: 'sample_main (exact picks, RAS)',
  bound: 0,
  ulps: 0,
  shapes: mainShapes,
  invariance: [mainInvariance],
};

export const sampleCodeCase: KernelCase = {
  name: 'sample_code (exact picks)',
  bound: 0,
  ulps: 0,
  shapes: codeShapes,
  invariance: [codeInvariance],
};
