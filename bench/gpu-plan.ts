// GPU bench of where a lane plan's seconds go at start-up (the last part of `serve`'s time to ready after the weights
// have streamed): the full model drawn in device memory, then planned for 64 lanes twice. The first plan loads the
// kernel modules and packs the routed experts on its first prefill; the second (fewer rows a lane, so that it fits
// beside the first's slots until they are freed) finds both done, so the difference
// is theirs. Beside it, every kernel module in the kernel folder loaded and unloaded once, timed alone.
// Usage: tsx bench/gpu-plan.ts <output directory>
import fs from 'node:fs';
import path from 'node:path';
import { CudaBackend } from '../src/backend/cuda/backend.ts';
import { CudaContext } from '../src/backend/cuda/context.ts';
import { cudaAvailability } from '../src/backend/cuda/driver.ts';
import { kernelDirectory } from '../src/backend/cuda/modules.ts';
import type { PlanTimes } from '../src/model/types.ts';
import { buildDeviceModel } from '../src/synth/device-model.ts';
import { FRAME_PRESETS } from './support/frames-run.ts';
import { markdownTable, writeReport } from './support/output.ts';

const LANES = 64;
const PLANS = [
  { name: 'first plan (modules loaded, experts packed)', rowsPerLane: 16384 },
  { name: 'second plan (both done)', rowsPerLane: 2048 },
];

const availability = cudaAvailability();
if (!availability.available) {
  console.log(`gpu-plan needs a CUDA device: ${availability.reason}`);
  process.exit(0);
}
const cuda = new CudaContext({ streamPriority: 'high' });
const backend = new CudaBackend(cuda);
const drawStarted = performance.now();
const { model } = await buildDeviceModel(cuda, backend, FRAME_PRESETS.full!, { seed: 5, prefillChunk: 256 });
console.log(`full model drawn on the device in ${((performance.now() - drawStarted) / 1000).toFixed(1)} s`);

const planned: { name: string; seconds: number; times: PlanTimes }[] = [];
for (const { name, rowsPerLane } of PLANS) {
  const started = performance.now();
  const times = model.plan({ lanes: LANES, rowsPerLane });
  if (times === undefined) throw new Error('the model measured no plan');
  planned.push({ name, seconds: (performance.now() - started) / 1000, times });
}

const folder = kernelDirectory();
const images = fs
  .readdirSync(folder)
  .filter((file) => file.endsWith('.fatbin'))
  .map((file) => ({ file, image: new Uint8Array(fs.readFileSync(path.join(folder, file))) }));
const loadStarted = performance.now();
const modules = images.map(({ file, image }) => cuda.driver.loadModule(image, file));
const loadSeconds = (performance.now() - loadStarted) / 1000;
for (const module of modules) cuda.driver.unloadModule(module);

const seconds = (value: number) => value.toFixed(3);
const table = markdownTable(
  ['plan of 64 lanes', 'seconds', 'slots', 'first prefill and step', 'step recordings', 'recording'],
  planned.map(({ name, seconds: total, times }) => [
    name,
    seconds(total),
    seconds(times.slotSeconds),
    seconds(times.firstRunSeconds),
    String(times.recordings),
    seconds(times.recordingSeconds),
  ]),
);
const modulesLine = `${images.length} kernel modules (${(images.reduce((sum, { image }) => sum + image.byteLength, 0) / 1e6).toFixed(1)} MB) loaded in ${seconds(loadSeconds)} s`;
console.log([...table, modulesLine].join('\n'));
writeReport('gpu-plan.json', { lanes: LANES, planned, modules: { count: images.length, loadSeconds } });
