// The Nsight Compute CSV reader behind bench/gpu-ncu-summary.ts: quoted fields, units, order, and the split of the
// launches between the profiled steps.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kernelDurations, profiledBatches, summariseSteps } from '../../bench/support/ncu-csv.ts';

const HEADER =
  '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"';

function row(id: number, name: string, unit: string, value: string, metric = 'gpu__time_duration.sum'): string {
  return `"${id}","7","node","host","${name}","1","13","(128, 1, 1)","(32, 1, 1)","0","9.0","Command line profiler metrics","${metric}","${unit}","${value}"`;
}

test('durations come out in launch order, in nanoseconds, from the duration rows only', () => {
  const csv = [
    '==PROF== Connected to process 7',
    HEADER,
    row(1, 'gemm_combine', 'nsecond', '1,500'),
    row(0, 'add_rms_norm_bf16', 'usecond', '2.5'),
    row(0, 'add_rms_norm_bf16', 'byte', '99', 'dram__bytes.sum'),
    row(2, 'moe_combine', 'nsecond', '800'),
  ].join('\n');
  assert.deepEqual(kernelDurations(csv), [
    { id: 0, name: 'add_rms_norm_bf16', nanoseconds: 2500 },
    { id: 1, name: 'gemm_combine', nanoseconds: 1500 },
    { id: 2, name: 'moe_combine', nanoseconds: 800 },
  ]);
  assert.deepEqual(kernelDurations('no profile here'), []);
});

test('launches split evenly between the steps, each summed by kernel, largest first', () => {
  const durations = [
    { id: 0, name: 'a', nanoseconds: 1 },
    { id: 1, name: 'b', nanoseconds: 5 },
    { id: 2, name: 'a', nanoseconds: 2 },
    { id: 3, name: 'a', nanoseconds: 10 },
    { id: 4, name: 'b', nanoseconds: 1 },
    { id: 5, name: 'a', nanoseconds: 10 },
  ];
  const [first, second] = summariseSteps(durations, [1, 64]);
  assert.deepEqual(first, {
    batch: 1,
    launches: 3,
    totalNanoseconds: 8,
    kernels: [
      { name: 'b', launches: 1, nanoseconds: 5 },
      { name: 'a', launches: 2, nanoseconds: 3 },
    ],
  });
  assert.equal(second!.batch, 64);
  assert.equal(second!.totalNanoseconds, 21);
  assert.equal(summariseSteps(durations.slice(0, 5), [1, 64])[0]!.batch, 0, 'an uneven count is one summary');
});

test('the profiled steps are the first and last batch the frame bench ran, one step when they are the same', () => {
  assert.deepEqual(profiledBatches(undefined), [1, 64]);
  assert.deepEqual(profiledBatches(''), [1, 64]);
  assert.deepEqual(profiledBatches('1'), [1]);
  assert.deepEqual(profiledBatches('1, 8, 32'), [1, 32]);
  // One profiled step of 4 launches is summed as one, not split in two.
  const durations = [0, 1, 2, 3].map((id) => ({ id, name: 'k', nanoseconds: 1 }));
  assert.deepEqual(
    summariseSteps(durations, profiledBatches('1')).map((step) => [step.batch, step.launches]),
    [[1, 4]],
  );
});
