// Sums the per-kernel GPU durations Nsight Compute read inside the recorded frame steps (bench/ncu-step.sh writes
// <output dir>/ncu-step.csv) and prints one table per profiled step: kernels by summed duration, and the sum beside
// the step's wall time, the difference being the time the GPU spends between kernels. Writes gpu-ncu-summary.json.
// Usage: tsx bench/gpu-ncu-summary.ts <output directory>
import fs from 'node:fs';
import path from 'node:path';
import { kernelDurations, profiledBatches, summariseSteps } from './support/ncu-csv.ts';
import { writeReport } from './support/output.ts';

const directory = process.argv[2] ?? '.';
const file = path.join(directory, 'ncu-step.csv');
if (!fs.existsSync(file)) {
  console.log(`gpu-ncu-summary: no ${file} (run bench/ncu-step.sh first)`);
  process.exit(0);
}
const durations = kernelDurations(fs.readFileSync(file, 'utf8'));
// bench/gpu-frames.ts opens the range around one step at its first and its last batch.
const steps = summariseSteps(durations, profiledBatches(process.env.DRAMA3_FRAMES_BATCHES));
for (const step of steps) {
  console.log(
    `\nbatch ${step.batch}: ${step.launches} kernels, ${(step.totalNanoseconds / 1e3).toFixed(1)} µs of kernel time summed`,
  );
  console.log('| kernel | launches | µs | share | µs per launch |');
  console.log('|---|---|---|---|---|');
  for (const row of step.kernels.slice(0, 25)) {
    const share = ((100 * row.nanoseconds) / step.totalNanoseconds).toFixed(1);
    const each = (row.nanoseconds / row.launches / 1e3).toFixed(2);
    console.log(`| ${row.name} | ${row.launches} | ${(row.nanoseconds / 1e3).toFixed(1)} | ${share}% | ${each} |`);
  }
}
console.log(`wrote ${writeReport('gpu-ncu-summary.json', { steps })}`);
