// The built kernels are not older than their sources: every kernels/cuda/*.cu and kernels/controls/*.cu has a
// build/kernels/<name>.fatbin written after the .cu and after every header it includes. Runs without a GPU; where
// build/kernels does not exist (nothing built here, e.g. a checkout without nvcc) it skips, saying so.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { staleKernels } from '../../scripts/kernel-files.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const built = path.join(root, 'build/kernels');
const sources = path.join(root, 'kernels/cuda');

function reasonToSkip(): string | false {
  if (!fs.existsSync(sources)) return `no kernel sources at ${path.relative(process.cwd(), sources)} to compare with`;
  if (!fs.existsSync(built)) return 'no build/kernels here (nothing built): run npm run build:kernels to check';
  return false;
}

test('no fatbin is missing or older than its source and the headers it includes', { skip: reasonToSkip() }, () => {
  const stale = staleKernels(root, built);
  assert.deepEqual(stale, [], `stale kernels (run npm run build:kernels):\n${stale.join('\n')}`);
});
