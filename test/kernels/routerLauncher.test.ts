// The router launchers on the host side, without a GPU: the fused router + quantiser's block (a routing warp and one
// warp per column block, never past the 17 warps of its __launch_bounds__), one block a row, its arguments in the
// order kernels/cuda/router_quantize.cu declares them; and the sizes one routing warp cannot hold refused by both.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import koffi from 'koffi';
import { routerTopK } from '../../src/backend/cuda/ops/router.ts';
import { routerTopKQuantize } from '../../src/backend/cuda/ops/routerQuantize.ts';
import { DramaError } from '../../src/errors.ts';
import { recordingDevice } from '../backend/support/recording-blocks.ts';

const pointers = { expertIds: 1n, expertWeights: 2n, q: 3n, scales: 4n, logits: 5n, x: 6n };
const real = { rows: 7, experts: 256, topK: 8, cols: 2048 };

test('the fused router + quantiser runs a block a row: a routing warp and a warp per column block, at most 16', () => {
  const { cuda, launched } = recordingDevice();
  routerTopKQuantize(cuda, { ...pointers, ...real });
  routerTopKQuantize(cuda, { ...pointers, ...real, rows: 1, cols: 1000 });
  routerTopKQuantize(cuda, { ...pointers, ...real, rows: 3, cols: 2304 });
  assert.deepEqual(
    launched.map(({ name, shape }) => [name, shape.grid, shape.block]),
    [
      ['router_top_k_quantize', [7, 1, 1], [17 * 32, 1, 1]],
      ['router_top_k_quantize', [1, 1, 1], [9 * 32, 1, 1]],
      ['router_top_k_quantize', [3, 1, 1], [17 * 32, 1, 1]],
    ],
  );
  const parameters = launched[0]!.parameters;
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5].map((index) => koffi.decode(parameters[index]!, 'uint64_t')),
    [1n, 2n, 3n, 4n, 5n, 6n].map(Number),
  );
  assert.deepEqual(
    [6, 7, 8, 9].map((index) => koffi.decode(parameters[index]!, 'int32_t')),
    [7, 256, 8, 2048],
  );
});

test('both router launchers refuse what one warp cannot route: over 512 experts, over 32 choices, more than exist', () => {
  const { cuda, launched } = recordingDevice();
  const refused = (change: Partial<typeof real>) => {
    for (const run of [
      () => routerTopK(cuda, { ...pointers, ...real, ...change }),
      () => routerTopKQuantize(cuda, { ...pointers, ...real, ...change }),
    ]) {
      assert.throws(run, (error: unknown) => error instanceof DramaError && error.code === 'KERNEL_ARGUMENT_INVALID');
    }
  };
  refused({ experts: 513 });
  refused({ topK: 33, experts: 512 });
  refused({ topK: 9, experts: 8 });
  refused({ rows: 0 });
  routerTopK(cuda, { ...pointers, ...real, experts: 512, topK: 32 });
  assert.throws(() => routerTopKQuantize(cuda, { ...pointers, ...real, cols: 0 }), /cols must be/);
  assert.equal(launched.length, 1);
});
