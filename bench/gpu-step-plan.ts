// GPU bench of what the frame step's time depends on besides the batch: the rows each lane is planned for, the lanes'
// positions, and whether the lanes read one prompt (as a serving bench's clients do) or each its own. One synthetic
// model at the full geometry is drawn in device memory once (as bench/gpu-frames.ts does); for each case the lanes
// are planned, prefilled and stepped at batch 1 and 64 (median of timed runs of consecutive steps after warm-up, the
// step's recorded graph replayed alone beside it), and one step at batch 64 is profiled by kernel.
// Serving differs from the frame bench in where its weights come from and its streams' priority, so both can be
// chosen: --source disk writes the preset in the real format (as bench/gpu-serve.ts does, seed 5, FP8 experts) and
// loads it as serving does; --priority high creates the streams as the engine does. The first case then steps
// batch 64 for SUSTAINED_STEPS more steps, timed in blocks, to show whether the step slows under sustained load.
// Writes gpu-step-plan-<source>-<priority>.json to the folder in argv[2].
// Usage: tsx bench/gpu-step-plan.ts <output directory> [--preset full|short|small] [--source device|disk]
//   [--priority normal|high]

import fs from 'node:fs';
import path from 'node:path';
import { CudaBackend } from '../src/backend/cuda/backend.ts';
import { CudaContext } from '../src/backend/cuda/context.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import type { CudaBuffer } from '../src/backend/cuda/tensors.ts';
import { loadSpeechModel } from '../src/model/load-model.ts';
import type { SlotSpeechModel } from '../src/model/speech-model.ts';
import type { Lane } from '../src/model/types.ts';
import { buildDeviceModel } from '../src/synth/device-model.ts';
import type { SynthPreset } from '../src/synth/plan.ts';
import { synthesizeCheckpoint } from '../src/synth/synthesize.ts';
import { defaultSynthThreads } from '../src/synth/tensor-threads.ts';
import { directSteps, FRAME_PRESETS, replayGraph, sampling, textPrompt } from './support/frames-run.ts';
import { median } from './support/gpu-timing.ts';
import { type LaunchProfile, profileLaunches } from './support/launch-profile.ts';
import { writeReport } from './support/output.ts';

interface PlanCase {
  readonly name: string;
  /** Rows each lane is planned for (0: what the run needs). */
  readonly rowsPerLane: number;
  readonly promptRows: number;
  /** Every lane reads the same prompt (its own seed still), as the serving bench's clients do. */
  readonly samePrompt: boolean;
}

const CASES: readonly PlanCase[] = [
  { name: 'planned for the run, 16-row prompts', rowsPerLane: 0, promptRows: 16, samePrompt: false },
  { name: 'planned for 16384 rows, 16-row prompts', rowsPerLane: 16384, promptRows: 16, samePrompt: false },
  { name: 'planned for 16384 rows, one 40-row prompt', rowsPerLane: 16384, promptRows: 40, samePrompt: true },
  { name: 'planned for 16384 rows, 300-row prompts', rowsPerLane: 16384, promptRows: 300, samePrompt: false },
];
const LANES = 64;
const BATCHES = [1, 64] as const;
const WARMUP_STEPS = 5;
const STEPS_PER_RUN = 20;
const RUNS = 5;
const SEED = 20261201;
const PREFILL_CHUNK = 256;
const SUSTAINED_STEPS = 1000;
const SUSTAINED_BLOCK = 100;

interface CaseResult {
  readonly name: string;
  readonly rowsPerLane: number;
  readonly promptRows: number;
  readonly samePrompt: boolean;
  readonly steps: { batch: number; stepMilliseconds: number; replayMilliseconds?: number; position: number }[];
  /** The first case only: ms a step at batch 64 in consecutive blocks of SUSTAINED_BLOCK steps. */
  readonly sustained: readonly number[];
  readonly profile: LaunchProfile;
}

function runCase(cuda: CudaContext, model: SlotSpeechModel<CudaBuffer>, plan: PlanCase): CaseResult {
  const framesPerLane = BATCHES.length * (WARMUP_STEPS + RUNS * STEPS_PER_RUN + 1) + SUSTAINED_STEPS + 2;
  const rowsPerLane = Math.max(plan.rowsPerLane, plan.promptRows + framesPerLane + 8);
  model.plan({ lanes: LANES, rowsPerLane });
  const codebooks = model.config.audio.codebooks;
  const lanes: Lane[] = [];
  for (let index = 0; index < LANES; index++) {
    const lane = model.newLane(sampling(SEED + index));
    const prompt = textPrompt(plan.promptRows, codebooks, plan.samePrompt ? 0 : index, model.candidates.imEnd);
    model.prefill(lane, prompt, 0, plan.promptRows);
    lanes.push(lane);
  }
  cuda.synchronize();
  const steps: CaseResult['steps'] = [];
  for (const batch of BATCHES) {
    const group = lanes.slice(0, batch);
    for (let index = 0; index < WARMUP_STEPS; index++) model.step(group);
    const position = group[0]!.position;
    const runs: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const started = performance.now();
      for (let index = 0; index < STEPS_PER_RUN; index++) model.step(group);
      runs.push(performance.now() - started);
    }
    const stepMilliseconds = median(runs) / STEPS_PER_RUN;
    const replayMilliseconds = replayGraph(cuda, model.backend, batch, STEPS_PER_RUN)?.stepMilliseconds;
    steps.push({
      batch,
      stepMilliseconds,
      position,
      ...(replayMilliseconds === undefined ? {} : { replayMilliseconds }),
    });
    console.log(
      `${plan.name}: batch ${batch} at row ${position}: ${stepMilliseconds.toFixed(2)} ms a step` +
        (replayMilliseconds === undefined ? '' : `, its graph alone ${replayMilliseconds.toFixed(2)} ms`),
    );
  }
  const sustained: number[] = [];
  if (plan === CASES[0]) {
    for (let block = 0; block < SUSTAINED_STEPS / SUSTAINED_BLOCK; block++) {
      const started = performance.now();
      for (let index = 0; index < SUSTAINED_BLOCK; index++) model.step(lanes);
      sustained.push((performance.now() - started) / SUSTAINED_BLOCK);
    }
    console.log(
      `batch 64 sustained, ms a step in blocks of ${SUSTAINED_BLOCK}: ${sustained.map((ms) => ms.toFixed(2)).join(' ')}`,
    );
  }
  const direct = directSteps(model);
  const profile = profileLaunches(cuda, () => direct.step(lanes));
  for (const lane of lanes) model.release(lane);
  return {
    name: plan.name,
    rowsPerLane,
    promptRows: plan.promptRows,
    samePrompt: plan.samePrompt,
    steps,
    sustained,
    profile,
  };
}

/** Kernels side by side: each case's milliseconds in one profiled step at batch 64, the largest first. */
function kernelTable(results: readonly CaseResult[]): string[] {
  const names = new Map<string, number>();
  for (const result of results) {
    for (const kernel of result.profile.kernels) {
      names.set(kernel.kernel, Math.max(names.get(kernel.kernel) ?? 0, kernel.milliseconds));
    }
  }
  const ordered = [...names.entries()].sort((a, b) => b[1] - a[1]).slice(0, 24);
  const header = `| kernel | ${results.map((_, index) => `case ${index + 1} ms`).join(' | ')} |`;
  const lines = [header, `|---|${results.map(() => '---|').join('')}`];
  for (const [name] of ordered) {
    const cells = results.map((result) => {
      const kernel = result.profile.kernels.find((entry) => entry.kernel === name);
      return kernel === undefined ? '' : `${kernel.milliseconds.toFixed(3)} (${kernel.launches})`;
    });
    lines.push(`| ${name} | ${cells.join(' | ')} |`);
  }
  lines.push(
    `| whole profiled step | ${results.map((result) => result.profile.milliseconds.toFixed(2)).join(' | ')} |`,
  );
  return lines;
}

const availability = cudaAvailability();
if (!availability.available) {
  console.log(`gpu-step-plan needs a CUDA device: ${availability.reason}`);
  process.exit(0);
}
function argument(name: string, fallback: string, allowed: readonly string[]): string {
  const flag = process.argv.indexOf(name);
  const value = flag >= 0 ? process.argv[flag + 1]! : fallback;
  if (!allowed.includes(value)) throw new Error(`${name} must be one of ${allowed.join(', ')}, got ${value}`);
  return value;
}

const presetName = argument('--preset', 'full', Object.keys(FRAME_PRESETS));
const source = argument('--source', 'device', ['device', 'disk']);
const priority = argument('--priority', 'normal', ['normal', 'high']);
if (source === 'disk' && !['tiny', 'small', 'full'].includes(presetName)) {
  throw new Error(`--source disk writes a synth preset (tiny, small or full), not ${presetName}`);
}
const cuda = new CudaContext({ streamPriority: priority === 'high' ? 'high' : 'normal' });
const backend = new CudaBackend(cuda);
const built = performance.now();
const folder = source === 'disk' ? fs.mkdtempSync(path.join(path.resolve('.'), '.gpu-step-plan-')) : undefined;
const { model, release } = await buildModel();
console.log(
  `${presetName} model from the ${source} in ${((performance.now() - built) / 1000).toFixed(1)} s, ` +
    `streams at ${priority} priority`,
);

async function buildModel(): Promise<{ model: SlotSpeechModel<CudaBuffer>; release: () => void }> {
  if (folder === undefined) {
    const preset = FRAME_PRESETS[presetName]!;
    const drawn = await buildDeviceModel(cuda, backend, preset, { seed: SEED, prefillChunk: PREFILL_CHUNK });
    return { model: drawn.model, release: () => drawn.weights.release() };
  }
  const dir = path.join(folder, 'checkpoint');
  const threads = defaultSynthThreads();
  await synthesizeCheckpoint(dir, { preset: presetName as SynthPreset, seed: 5, experts: 'fp8', threads });
  console.log(`wrote the ${presetName} preset in ${((performance.now() - built) / 1000).toFixed(1)} s`);
  const model = await loadSpeechModel(dir, backend, { prefillChunk: PREFILL_CHUNK });
  return { model, release: () => undefined };
}

const results = CASES.map((plan) => runCase(cuda, model, plan));
const lines = [
  `Frame step by plan and prompt (${presetName} preset from the ${source}, streams at ${priority} priority, ${LANES} lanes, median of ${RUNS} runs of ${STEPS_PER_RUN} steps)`,
  '',
  '| case | planned rows | batch 1 ms (graph) | batch 64 ms (graph) | batch 64 at row |',
  '|---|---|---|---|---|',
  ...results.map((result, index) => {
    const cell = (batch: number) => {
      const step = result.steps.find((entry) => entry.batch === batch)!;
      const graph = step.replayMilliseconds === undefined ? '' : ` (${step.replayMilliseconds.toFixed(2)})`;
      return `${step.stepMilliseconds.toFixed(2)}${graph}`;
    };
    const at = result.steps.find((entry) => entry.batch === 64)!.position;
    return `| ${index + 1}: ${result.name} | ${result.rowsPerLane} | ${cell(1)} | ${cell(64)} | ${at} |`;
  }),
  '',
  'Kernels of one profiled step at batch 64 (an event between launches: read the differences, not the sums):',
  '',
  ...kernelTable(results),
];
console.log(lines.join('\n'));
const report = { preset: presetName, source, priority, results };
console.log(`wrote ${writeReport(`gpu-step-plan-${source}-${priority}.json`, report)}`);
release();
if (folder !== undefined) fs.rmSync(folder, { recursive: true, force: true });
