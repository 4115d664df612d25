// Frames per second of the cpu speech model on a `tiny` synthetic checkpoint (or --model DIR): one lane, and lanes
// batched into one frame step (aggregate frames/s over the batch), each the median of --runs interleaved runs, with the per-stage
// split of the median batch-1 run and the prefill rate. Prints one table, then the numbers as JSON (to --json FILE
// when given, else as the last line).
// Usage: tsx bench/cpu-frames.ts [--model DIR] [--frames N] [--batches 1,8] [--runs 3] [--precision bf16|fp32|fp64]
//        [--json FILE]
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CpuBackend } from '../src/backend/cpu/backend.ts';
import type { PrecisionName } from '../src/backend/cpu/precision.ts';
import { loadSpeechModel } from '../src/model/load-model.ts';
import { DEFAULT_SAMPLING, type PromptRows } from '../src/model/types.ts';
import { CODES_PER_FRAME } from '../src/shared/frame.ts';
import { synthesizeCheckpoint } from '../src/synth/synthesize.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    frames: { type: 'string', default: '200' },
    batches: { type: 'string', default: '1,8' },
    runs: { type: 'string', default: '3' },
    precision: { type: 'string', default: 'bf16' },
    json: { type: 'string' },
  },
});
const frameCount = Number(values.frames);
const batches = values.batches.split(',').map(Number);
const runs = Number(values.runs);
const precision = values.precision as PrecisionName;

const temporary = values.model === undefined ? await mkdtemp(join(tmpdir(), 'drama3-bench-')) : undefined;
const modelDir = values.model ?? temporary!;
if (temporary !== undefined) await synthesizeCheckpoint(temporary, { preset: 'tiny', seed: 1, experts: 'fp8' });
const promptRows = 100;
const capacity = { lanes: Math.max(...batches), rowsPerLane: promptRows + frameCount + 2 };
const model = await loadSpeechModel(modelDir, new CpuBackend({ precision }), { capacity });
if (model.synthetic) console.log('note: synthetic checkpoint (random weights): the frames are noise, not speech');

// A 100-row prompt: 60 text rows then 40 reference code rows.
const tokens = new Int32Array(promptRows);
const codes = new Int32Array(promptRows * CODES_PER_FRAME).fill(-1);
for (let row = 0; row < promptRows; row++) {
  if (row < 60) {
    tokens[row] = 1000 + row;
    continue;
  }
  for (let k = 0; k < CODES_PER_FRAME; k++) codes[row * CODES_PER_FRAME + k] = (row * 97 + k) % 1024;
  tokens[row] = model.candidates.semanticBegin + codes[row * CODES_PER_FRAME]!;
}
const prompt: PromptRows = { tokens, codes, referenceRows: promptRows };

interface Run {
  readonly framesPerSecond: number;
  readonly prefillRowsPerSecond: number;
  readonly stages: { backbone: number; sampler: number; tower: number };
}

/** `batch` lanes (seeds 1..batch) prefilled, then `frames` steps over all of them together. */
function run(batch: number, frames: number): Run {
  const lanes = Array.from({ length: batch }, (_, index) => model.newLane({ ...DEFAULT_SAMPLING, seed: index + 1 }));
  const prefillStarted = performance.now();
  for (const lane of lanes) model.prefill(lane, prompt, 0, promptRows);
  const prefillDone = performance.now();
  Object.assign(model.stageTimes, { prefill: 0, backbone: 0, tower: 0, sampler: 0 });
  let drawn = 0;
  for (let step = 0; step < frames; step++) {
    for (const outcome of model.step(lanes)) drawn += outcome.end ? 0 : 1;
  }
  const elapsed = performance.now() - prefillDone;
  for (const lane of lanes) model.release(lane);
  const { backbone, sampler, tower } = model.stageTimes;
  const perFrame = (ms: number) => ms / drawn;
  return {
    framesPerSecond: (drawn * 1000) / elapsed,
    prefillRowsPerSecond: (batch * promptRows * 1000) / (prefillDone - prefillStarted),
    stages: { backbone: perFrame(backbone), sampler: perFrame(sampler), tower: perFrame(tower) },
  };
}

const median = (list: Run[]) => [...list].sort((a, b) => a.framesPerSecond - b.framesPerSecond)[list.length >> 1]!;

// Warm up the JIT on every batch size, twice, so that no function is re-optimised inside a measured run.
for (let round = 0; round < 2; round++) for (const batch of batches) run(batch, 60);
const load = loadavg()[0]!;
// Runs of the batch sizes interleave, so that a change in the machine's load weighs on each size alike.
const measured = new Map<number, Run[]>(batches.map((batch) => [batch, []]));
for (let index = 0; index < runs; index++)
  for (const batch of batches) measured.get(batch)!.push(run(batch, frameCount));
const results = batches.map((batch) => {
  const all = measured.get(batch)!;
  return { batch, median: median(all), all: all.map((item) => item.framesPerSecond) };
});
const report = {
  machine: `${cpus()[0]?.model ?? 'unknown cpu'} (one thread), load average ${load.toFixed(2)} at start`,
  precision,
  promptRows,
  frames: frameCount,
  runs,
  batches: results.map(({ batch, median: best, all }) => ({
    batch,
    framesPerSecond: best.framesPerSecond,
    framesPerSecondPerLane: best.framesPerSecond / batch,
    runsFramesPerSecond: all,
    prefillRowsPerSecond: best.prefillRowsPerSecond,
    millisecondsPerFrame: best.stages,
  })),
};
console.log(
  `cpu frames, ${report.machine}, ${precision}, prompt ${promptRows} rows, ${frameCount} steps, median of ${runs}`,
);
console.log('batch  frames/s  per lane  backbone  main draw  tower+codes (ms/frame)  prefill rows/s');
for (const entry of report.batches) {
  const { backbone, sampler, tower } = entry.millisecondsPerFrame;
  console.log(
    `${String(entry.batch).padStart(5)}  ${entry.framesPerSecond.toFixed(1).padStart(8)}  ` +
      `${entry.framesPerSecondPerLane.toFixed(1).padStart(8)}  ${backbone.toFixed(3).padStart(8)}  ` +
      `${sampler.toFixed(3).padStart(9)}  ${tower.toFixed(3).padStart(11)}  ${entry.prefillRowsPerSecond.toFixed(0).padStart(24)}`,
  );
}
if (values.json !== undefined) await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
else console.log(JSON.stringify(report));
if (temporary !== undefined) await rm(temporary, { recursive: true, force: true });
