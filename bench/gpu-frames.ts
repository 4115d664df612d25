// GPU bench of the whole frame step at the model's geometry: a synthetic model drawn in device memory (no files;
// synth's values), frames/s at batch 1, 8, 32 and 64 with the tower, the bytes a step reads and the roofline they
// give at the copy bandwidth measured in the same run, prefill rows/s at 256 and 4096 rows, device memory for the
// weights and per lane, the PyTorch baseline of ECOSYSTEM.md beside them, and the kernels by share of a step.
// Writes gpu-frames.json to the folder in argv[2]; a pytorch-frames.json there (bench/pytorch-frames.py, run first in
// the same device call) is the baseline printed beside the figures, else ECOSYSTEM.md's.
// Usage: tsx bench/gpu-frames.ts <output directory> [--preset full|short|small] (or DRAMA3_FRAMES_PRESET=short)
// DRAMA3_PROFILER_RANGE=1 opens the profiler range around one recorded step at batch 1 and 64 (bench/ncu-step.sh).
// DRAMA3_FRAMES_BATCHES=1,64 times only those batch sizes; DRAMA3_SIDE_STREAM=off runs the blocks' independent parts
// one after the other (CudaContext.alongside) to measure what running them together gives.
// DRAMA3_FRAMES_ROWS_PER_LANE=16384 plans each lane for that many rows, as serving plans lanes for what the device
// holds, where the run needs a few hundred (kernels sized by the plan's capacity, such as attention's split grid).
// DRAMA3_FRAMES_LANES=4 plans and prefills only that many lanes (at least the largest batch timed), so that lanes of
// more rows fit the device: the batch-1 step over a slab past 16384 rows runs the few-rows attention's shared form.
// DRAMA3_DEPENDENT_LAUNCH=off launches every kernel without programmatic dependent launch (to measure what it gives).
// DRAMA3_TAIL_STREAM=off runs each step's tail where it is queued instead of beside the next step's head.
// The streams run at serving's priority (DRAMA3_STEP_PRIORITY=normal: the driver's default); steps of up to 16 rows run
// their tail a priority lower (DRAMA3_TAIL_PRIORITY=level: never, =below: every step's).
// short: the full widths with 4 backbone layers, 64 experts and 1 shared tower layer (a quick check of the run).

import fs from 'node:fs';
import path from 'node:path';
import { CudaBackend } from '../src/backend/cuda/backend.ts';
import { CudaContext } from '../src/backend/cuda/context.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import { setDependentLaunch } from '../src/backend/cuda/ops/launch.ts';
import { framesReport, measuredBaseline, PYTORCH_BASELINE } from './support/frames-report.ts';
import { DEFAULT_FRAMES_OPTIONS, type FramesOptions, measureFrames } from './support/frames-run.ts';
import { writeReport } from './support/output.ts';
import { copyBandwidth } from './support/roofline.ts';

function options(): FramesOptions {
  const flag = process.argv.indexOf('--preset');
  const preset = flag >= 0 ? process.argv[flag + 1] : process.env.DRAMA3_FRAMES_PRESET;
  const profilerRange = process.env.DRAMA3_PROFILER_RANGE === '1';
  const batches = batchesFromEnvironment() ?? DEFAULT_FRAMES_OPTIONS.batches;
  const lanes = positiveIntegerFromEnvironment('DRAMA3_FRAMES_LANES') ?? DEFAULT_FRAMES_OPTIONS.lanes;
  if (lanes < Math.max(...batches) || lanes > DEFAULT_FRAMES_OPTIONS.lanes) {
    throw new Error(
      `DRAMA3_FRAMES_LANES must be from the largest batch timed (${Math.max(...batches)}) to ${DEFAULT_FRAMES_OPTIONS.lanes}, got ${lanes}`,
    );
  }
  const rowsPerLane = positiveIntegerFromEnvironment('DRAMA3_FRAMES_ROWS_PER_LANE');
  return {
    ...DEFAULT_FRAMES_OPTIONS,
    preset: preset ?? DEFAULT_FRAMES_OPTIONS.preset,
    profilerRange,
    batches,
    lanes,
    ...(rowsPerLane === undefined ? {} : { rowsPerLane }),
  };
}

/** A setting that must be a positive integer where given (absent or blank: undefined). */
function positiveIntegerFromEnvironment(name: string): number | undefined {
  const text = process.env[name];
  if (text === undefined || text.trim() === '') return undefined;
  const value = Number(text);
  if (!(Number.isInteger(value) && value > 0)) throw new Error(`${name} must be a positive integer, got ${text}`);
  return value;
}

/** DRAMA3_FRAMES_BATCHES=1,64: only those batch sizes (each 1 to 64), for a quicker comparison run. */
function batchesFromEnvironment(): number[] | undefined {
  const text = process.env.DRAMA3_FRAMES_BATCHES;
  if (text === undefined || text.trim() === '') return undefined;
  const batches = text.split(',').map((part) => Number(part.trim()));
  if (batches.some((batch) => !Number.isInteger(batch) || batch < 1 || batch > DEFAULT_FRAMES_OPTIONS.lanes)) {
    throw new Error(
      `DRAMA3_FRAMES_BATCHES must list batch sizes from 1 to ${DEFAULT_FRAMES_OPTIONS.lanes}, got ${text}`,
    );
  }
  return batches;
}

const availability = cudaAvailability();
if (!availability.available) {
  console.log(`gpu-frames needs a CUDA device: ${availability.reason}`);
  process.exit(0);
}
const dependentLaunch = process.env.DRAMA3_DEPENDENT_LAUNCH !== 'off';
setDependentLaunch(dependentLaunch);
console.log(
  `launches: ${dependentLaunch ? 'programmatic dependent launch' : 'serialised (DRAMA3_DEPENDENT_LAUNCH=off)'}`,
);
// The streams at the priority serving gives the engine's (src/engine/load-runtime.ts), which leaves one below it for
// small steps' tails; DRAMA3_STEP_PRIORITY=normal: the driver's default.
const stepPriority = process.env.DRAMA3_STEP_PRIORITY === 'normal' ? 'normal' : 'high';
console.log(`streams: ${stepPriority === 'high' ? "serving's priority" : "the driver's default priority"}`);
const cuda = new CudaContext({ streamPriority: stepPriority });
const backend = new CudaBackend(cuda);
const copy = copyBandwidth(cuda);
console.log(`copy bandwidth ${copy.gigabytesPerSecond.toFixed(0)} GB/s (read + written)`);
const measured = await measureFrames(cuda, backend, options(), copy);
const baselineFile = path.join(process.argv[2] ?? '.', 'pytorch-frames.json');
const baseline = fs.existsSync(baselineFile)
  ? measuredBaseline(JSON.parse(fs.readFileSync(baselineFile, 'utf8')))
  : PYTORCH_BASELINE;
const { lines, json } = framesReport(measured, cuda.properties, baseline);
console.log(lines.join('\n'));
console.log(`wrote ${writeReport('gpu-frames.json', { ...(json as object), dependentLaunch })}`);
measured.release();
backend.close();
cuda.close();
