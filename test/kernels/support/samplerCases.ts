// Contract cases for kernels/cuda/sampler.cu against src/backend/cpu/ops/sampling.ts: the picks must be EXACTLY the
// cpu sampler's (integer outputs), for `main` with RAS against each lane's window (written into frame records as
// (candidate token, index or −1)) and for codebook columns, over lanes with mixed settings (greedy, top-k
// 0/1/2/30/100, temperatures, top-p 1 and 0.5) so that every path of the kernel runs; with fp32 logits and with bf16
// logits (the model's), whose reference draws from the bf16 values themselves.
import {
  drawCode,
  drawMain,
  drawScratch,
  type LaneSampling,
  laneSampling,
  RAS_WINDOW,
} from '../../../src/backend/cpu/ops/sampling.ts';
import {
  LANE_TABLE_STRIDE,
  type SamplerLogits,
  sampleCode,
  sampleMain,
  writeLaneEntry,
} from '../../../src/backend/cuda/ops/sampler.ts';
import type { HostInput, InvarianceCase, KernelCase, Prepared, ShapeCase } from './contract.ts';
import { bf16FromValues, Random } from './random.ts';

const SEMANTIC = 4096;
const MAIN_CANDIDATES = SEMANTIC + 1;
const CODEBOOK = 1024;
const RECORD_WIDTH = 11;

const SETTINGS = [
  { temperature: 1, topP: 0.9, topK: 30, greedy: false },
  { temperature: 0.7, topP: 0.95, topK: 30, greedy: false },
  { temperature: 1, topP: 1, topK: 0, greedy: false },
  { temperature: 1, topP: 1, topK: 1, greedy: false },
  { temperature: 1.3, topP: 1, topK: 2, greedy: false },
  { temperature: 1, topP: 0.8, topK: 100, greedy: false },
  { temperature: 1, topP: 0.9, topK: 30, greedy: true },
  // Every candidate ranked, the top-p cut deep in the list.
  { temperature: 1.5, topP: 0.5, topK: 0, greedy: false },
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

/** The lanes' logits as the kernel reads them (fp32 or bf16) and the values the reference draws from. */
function logitsFor(lanes: readonly LaneDraw[], dtype: SamplerLogits): { input: HostInput; values: ArrayLike<number> } {
  const logits = concatenate(lanes.map((lane) => lane.logits)) as Float32Array;
  if (dtype === 'f32') return { input: logits, values: logits };
  const bf16 = bf16FromValues(logits);
  return { input: bf16, values: bf16.values };
}

/** Distinct token ids per candidate index, so that a wrong index shows in the record's token. */
function candidateTokens(count: number): Int32Array {
  return Int32Array.from({ length: count }, (_, index) => 100_000 + ((index * 7919) % 50_021));
}

function prepareMain(lanes: readonly LaneDraw[], dtype: SamplerLogits): Prepared {
  const count = MAIN_CANDIDATES;
  const windows = concatenate(lanes.map((lane) => lane.window)) as Int32Array;
  const logits = logitsFor(lanes, dtype);
  const candidates = candidateTokens(count);
  return {
    inputs: { logits: logits.input, laneTable: laneTable(lanes), initialWindows: windows, candidates },
    outputs: [
      { name: 'records', kind: 'i32', count: lanes.length * RECORD_WIDTH },
      { name: 'windows', kind: 'i32', count: windows.length },
    ],
    reference() {
      const scratch = drawScratch(count);
      const records = new Int32Array(lanes.length * RECORD_WIDTH);
      const after = windows.slice();
      lanes.forEach((lane, b) => {
        const offset = b * count;
        const chosen = drawMain(
          logits.values,
          offset,
          count,
          SEMANTIC,
          lane.sampling,
          lane.frame,
          after,
          b * RAS_WINDOW,
          scratch,
        );
        records[b * RECORD_WIDTH] = candidates[chosen]!;
        records[b * RECORD_WIDTH + 1] = chosen < SEMANTIC ? chosen : -1;
      });
      return { records, windows: after };
    },
    run(cuda, p, kernel) {
      cuda.driver.copyDeviceToDevice(p.windows!, p.initialWindows!, windows.byteLength, cuda.stream);
      // Only the first two fields of each record are the kernel's: the rest is zeroed here, as the reference has it.
      cuda.driver.fillWords(p.records!, 0, lanes.length * RECORD_WIDTH, cuda.stream);
      sampleMain(
        cuda,
        {
          records: p.records!,
          recordStride: RECORD_WIDTH,
          logits: p.logits!,
          logitsDtype: dtype,
          logitsStride: count,
          count,
          semanticCount: SEMANTIC,
          candidates: p.candidates!,
          laneTable: p.laneTable!,
          lanes: lanes.length,
          rasWindow: p.windows!,
        },
        { kernel },
      );
    },
  };
}

function prepareCode(lanes: readonly LaneDraw[], column: number, dtype: SamplerLogits): Prepared {
  const count = CODEBOOK;
  const stride = RECORD_WIDTH;
  const logits = logitsFor(lanes, dtype);
  return {
    inputs: { logits: logits.input, laneTable: laneTable(lanes) },
    outputs: [{ name: 'codes', kind: 'i32', count: lanes.length * stride }],
    reference() {
      const scratch = drawScratch(count);
      const codes = new Int32Array(lanes.length * stride);
      lanes.forEach((lane, b) => {
        const offset = b * count;
        codes[b * stride + 1 + column] = drawCode(
          logits.values,
          offset,
          count,
          lane.sampling,
          lane.frame,
          column,
          scratch,
        );
      });
      return { codes };
    },
    run(cuda, p, kernel) {
      // Only code[column] of each frame record is the kernel's: the rest is filled here, as the reference has it.
      cuda.driver.fillWords(p.codes!, 0, lanes.length * stride, cuda.stream);
      sampleCode(
        cuda,
        {
          out: p.codes!,
          outStride: stride,
          outOffset: 1 + column,
          logits: p.logits!,
          logitsDtype: dtype,
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

function mainShapes(dtype: SamplerLogits): ShapeCase[] {
  return [1, 7, 64].map((lanes) => ({
    label: `main, ${lanes} lanes × ${MAIN_CANDIDATES} ${dtype} candidates`,
    prepare: (random: Random, nonFinite: boolean) =>
      prepareMain(lanesFor(random, MAIN_CANDIDATES, lanes, nonFinite), dtype),
  }));
}

function codeShapes(dtype: SamplerLogits): ShapeCase[] {
  return [
    [1, 1],
    [7, 4],
    [64, 9],
  ].map(([lanes, column]) => ({
    label: `code[${column}], ${lanes} lanes × ${CODEBOOK} ${dtype}`,
    prepare: (random: Random, nonFinite: boolean) =>
      prepareCode(lanesFor(random, CODEBOOK, lanes!, nonFinite), column!, dtype),
  }));
}

/** Lane r's draw depends only on (seed, r), so the first r lanes are the same in calls of any size. */
function invariantLanes(seed: number, rows: number, count: number): LaneDraw[] {
  return Array.from({ length: rows }, (_, lane) => drawLane(new Random(seed * 7919 + lane), count, lane, false));
}

function mainInvariance(dtype: SamplerLogits): InvarianceCase {
  return {
    label: `main (${dtype}): a lane alone and beside 1, 6, 63, 256 others`,
    prepare: (seed, rows) => prepareMain(invariantLanes(seed, rows, MAIN_CANDIDATES), dtype),
    elementsPerRow: { records: RECORD_WIDTH, windows: RAS_WINDOW },
  };
}

function codeInvariance(dtype: SamplerLogits): InvarianceCase {
  return {
    label: `code[5] (${dtype}): a lane alone and beside others`,
    prepare: (seed, rows) => prepareCode(invariantLanes(seed, rows, CODEBOOK), 5, dtype),
    elementsPerRow: { codes: RECORD_WIDTH },
  };
}

export const sampleMainCase: KernelCase = {
  name: 'sample_main (exact picks, RAS)',
  bound: 0,
  ulps: 0,
  shapes: mainShapes('f32'),
  invariance: [mainInvariance('f32')],
};

export const sampleCodeCase: KernelCase = {
  name: 'sample_code (exact picks)',
  bound: 0,
  ulps: 0,
  shapes: codeShapes('f32'),
  invariance: [codeInvariance('f32')],
};

export const sampleMainBf16Case: KernelCase = {
  name: 'sample_main_bf16 (exact picks from bf16 logits, RAS)',
  bound: 0,
  ulps: 0,
  shapes: mainShapes('bf16'),
  invariance: [mainInvariance('bf16')],
};

export const sampleCodeBf16Case: KernelCase = {
  name: 'sample_code_bf16 (exact picks from bf16 logits)',
  bound: 0,
  ulps: 0,
  shapes: codeShapes('bf16'),
  invariance: [codeInvariance('bf16')],
};
