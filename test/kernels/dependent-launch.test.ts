// Every launch is a programmatic dependent launch (ops/launch.ts), so a kernel may start while the one before it
// still runs: each kernel must wait for the previous grids (kernels/cuda/common.cuh) before it reads their outputs or
// returns. This reads the kernel sources and refuses an entry point that does not begin with that wait.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { kernelEntries, missingPrologues } from './support/kernel-prologues.ts';

const ROOT = new URL('../../kernels/', import.meta.url).pathname;

function sources(): { path: string; text: string }[] {
  return ['cuda', 'controls'].flatMap((folder) =>
    readdirSync(join(ROOT, folder))
      .filter((name) => name.endsWith('.cu') || name.endsWith('.cuh'))
      .sort()
      .map((name) => ({ path: `kernels/${folder}/${name}`, text: readFileSync(join(ROOT, folder, name), 'utf8') })),
  );
}

test('every kernel entry point waits for the previous grids before anything else', () => {
  const files = sources();
  const entries = files.flatMap((file) => kernelEntries(file.path, file.text));
  assert.ok(entries.length > 60, `found only ${entries.length} kernel entry points: the scan is broken`);
  assert.deepEqual(missingPrologues(entries), []);
});

test('the scan finds a kernel that does not begin with the prologue, also inside a macro', () => {
  const plain = 'extern "C" __global__ void late(float* y, const float* x) {\n  const int i = threadIdx.x;\n}\n';
  const macro =
    '#define ENTRY(name) \\\n  extern "C" __global__ void __launch_bounds__(64) name(float* y) { \\\n' +
    '    if (blockIdx.x > 0) return; \\\n    KERNEL_PROLOGUE(); \\\n  }\n';
  const good = 'extern "C" __global__ void fine(int n) {\n  KERNEL_PROLOGUE();\n  if (n == 0) return;\n}\n';
  // Idle attention blocks may return unwaited, but the others must then wait before anything else.
  const idle =
    'extern "C" __global__ void spread(const int* t) {\n  allow_dependent_launch();\n' +
    '  if (attention_block_idle<0>(t, 1, 1, 1)) return;\n  wait_for_previous_grids();\n}\n';
  // The few-rows kernel's shared form names its fold first (no load), then checks for idle blocks.
  const sharedIdle =
    'extern "C" __global__ void shared_idle(const int* t, int fold) {\n  allow_dependent_launch();\n' +
    '  const bool shared = fold == ATTENTION_FOLD_SHARED;\n' +
    '  if (few_rows_block_idle<0>(t, 1, 1, 1, 2, shared)) return;\n  wait_for_previous_grids();\n}\n';
  const sharedLoad =
    'extern "C" __global__ void shared_load(const int* t, int fold) {\n  allow_dependent_launch();\n' +
    '  const bool shared = t[0] == ATTENTION_FOLD_SHARED;\n' +
    '  if (few_rows_block_idle<0>(t, 1, 1, 1, 2, shared)) return;\n  wait_for_previous_grids();\n}\n';
  const idleUnwaited =
    'extern "C" __global__ void unwaited(const int* t) {\n  allow_dependent_launch();\n' +
    '  if (attention_block_idle<0>(t, 1, 1, 1)) return;\n  t += 1;\n}\n';
  // Weights may be loaded before the wait through the early-load helpers; any other load or a return may not.
  const early =
    'extern "C" __global__ void early(const float* w, int cols) {\n  allow_dependent_launch();\n' +
    '  const int held = threadIdx.x < 4 ? cols : 0;\n  const PassWeights e = early_pass_weights(w, cols, held, 4);\n' +
    '  wait_for_previous_grids();\n  if (cols == 0) return;\n}\n';
  const earlyActivation =
    'extern "C" __global__ void early_activation(const float* x) {\n  allow_dependent_launch();\n' +
    '  const float v = x[threadIdx.x];\n  wait_for_previous_grids();\n}\n';
  const earlyReturn =
    'extern "C" __global__ void early_return(const float* w, int cols) {\n  allow_dependent_launch();\n' +
    '  const PassWeights e = early_pass_weights(w, cols, cols, 4);\n  if (cols == 0) return;\n' +
    '  wait_for_previous_grids();\n}\n';
  const entries = [
    ...kernelEntries('plain.cu', plain),
    ...kernelEntries('macro.cuh', macro),
    ...kernelEntries('good.cu', good),
    ...kernelEntries('idle.cu', idle),
    ...kernelEntries('shared-idle.cu', sharedIdle),
    ...kernelEntries('shared-load.cu', sharedLoad),
    ...kernelEntries('idle-unwaited.cu', idleUnwaited),
    ...kernelEntries('early.cu', early),
    ...kernelEntries('early-activation.cu', earlyActivation),
    ...kernelEntries('early-return.cu', earlyReturn),
  ];
  assert.deepEqual(
    missingPrologues(entries).map((entry) => entry.split(':')[0]),
    ['plain.cu', 'macro.cuh', 'shared-load.cu', 'idle-unwaited.cu', 'early-activation.cu', 'early-return.cu'],
  );
});
