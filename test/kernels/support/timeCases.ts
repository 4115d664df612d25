// Times the host side of every contract case (inputs, fp64 references, invariance and equivalence inputs), the
// part of a contract run that is not the GPU: `node --import tsx test/kernels/support/timeCases.ts [name filter]`.
import { performance } from 'node:perf_hooks';
import { controls } from './controls.ts';
import { kernelCases } from './kernelCases.ts';
import { Random } from './random.ts';
import { DEFAULT_ROW_COUNTS } from './schedules.ts';

const filter = process.argv[2] ?? '';
const rows: { what: string; seconds: number }[] = [];
const totals = new Map<string, number>();

function time(caseName: string, what: string, work: () => void): void {
  const start = performance.now();
  work();
  const seconds = (performance.now() - start) / 1000;
  rows.push({ what: `${caseName}: ${what}`, seconds });
  console.log(`${seconds.toFixed(2).padStart(7)} s  ${caseName}: ${what}`);
  totals.set(caseName, (totals.get(caseName) ?? 0) + seconds);
}

for (const kernelCase of kernelCases) {
  if (!kernelCase.name.includes(filter)) continue;
  const random = new Random(12345);
  for (const shape of kernelCase.shapes) {
    for (const nonFinite of [false, true]) {
      time(kernelCase.name, `${shape.label}${nonFinite ? ' (non-finite)' : ''}`, () => {
        const prepared = shape.prepare(random, nonFinite);
        // Chained references read earlier device outputs: zeros stand in for them here (the cost is the same).
        const device = Object.fromEntries(prepared.outputs.map((o) => [o.name, new Float64Array(o.count)]));
        prepared.reference(device);
      });
    }
  }
  for (const invariance of kernelCase.invariance ?? []) {
    for (const count of invariance.rowCounts ?? DEFAULT_ROW_COUNTS) {
      time(kernelCase.name, `invariance ${invariance.label} at ${count} rows`, () => invariance.prepare(7, count));
    }
  }
  for (const equivalence of kernelCase.equivalences ?? []) {
    time(kernelCase.name, `equivalence ${equivalence.label}`, () => equivalence.prepare(random));
  }
}

console.log('slowest:');
rows.sort((a, b) => b.seconds - a.seconds);
for (const { what, seconds } of rows.slice(0, 40)) console.log(`${seconds.toFixed(2).padStart(7)} s  ${what}`);
console.log('per case:');
const sorted = [...totals].sort((a, b) => b[1] - a[1]);
for (const [name, seconds] of sorted) console.log(`${seconds.toFixed(2).padStart(7)} s  ${name}`);
const total = sorted.reduce((sum, [, seconds]) => sum + seconds, 0);
console.log(`${total.toFixed(2).padStart(7)} s  total`);
// The contract runs each control's case once more.
const withControls = controls.reduce((sum, control) => sum + (totals.get(control.kernelCase.name) ?? 0), total);
if (filter === '') console.log(`${withControls.toFixed(2).padStart(7)} s  total with the controls' cases`);
