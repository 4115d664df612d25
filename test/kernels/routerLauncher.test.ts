// The router launchers on the host side, without a GPU: the fused router + quantiser's block (a routing warp and one
// warp per column block, never past the 17 warps of its __launch_bounds__), one block a row, its arguments in the
// order kernels/cuda/router_quantize.cu declares them; both launchers' grouping (its tables, the arrival counter and
// the tile sizes in the kernels' order, nulls without one); and the sizes one routing warp, or the grouping's tables,
// cannot hold refused by both.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import koffi from 'koffi';
import { moeMaxTiles } from '../../src/backend/cuda/ops/moe.ts';
import { routerTopK } from '../../src/backend/cuda/ops/router.ts';
import { routerTopKQuantize } from '../../src/backend/cuda/ops/routerQuantize.ts';
import { DramaError } from '../../src/errors.ts';
import { recordingDevice } from '../backend/support/recording-blocks.ts';

const pointers = { expertIds: 1n, expertWeights: 2n, q: 3n, scales: 4n, logits: 5n, x: 6n };
const grouping = { pairSlots: 7n, expertOffsets: 8n, tiles: 9n, tileCount: 10n, arrivals: 11n };
const real = { rows: 7, experts: 256, topK: 8, cols: 2048 };

const pointerAt = (parameters: BigUint64Array, indices: number[]) =>
  indices.map((index) => koffi.decode(parameters[index]!, 'uint64_t'));
const int32At = (parameters: BigUint64Array, indices: number[]) =>
  indices.map((index) => koffi.decode(parameters[index]!, 'int32_t'));

test('the fused router + quantiser runs a block a row: a routing warp and a warp per column block, at most 16', () => {
  const { cuda, launched } = recordingDevice();
  routerTopKQuantize(cuda, { ...pointers, ...real, grouping });
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
  // ids, weights, q, scales, the grouping's four tables and counter, logits, x; rows, experts, topK, cols, tile sizes.
  const parameters = launched[0]!.parameters;
  assert.deepEqual(pointerAt(parameters, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), [1, 2, 3, 4, 7, 8, 9, 10, 11, 5, 6]);
  assert.deepEqual(int32At(parameters, [11, 12, 13, 14, 15, 16]), [7, 256, 8, 2048, 8, moeMaxTiles(7 * 8, 256)]);
  // Without a grouping the tables and the counter are null: the kernel groups nothing.
  assert.deepEqual(pointerAt(launched[1]!.parameters, [4, 5, 6, 7, 8]), [0, 0, 0, 0, 0]);
});

test('the router groups in its launch when given a grouping: the tables and counter after the ids and weights', () => {
  const { cuda, launched } = recordingDevice();
  routerTopK(cuda, { ...pointers, ...real, grouping });
  routerTopK(cuda, { ...pointers, ...real, rows: 9 });
  assert.deepEqual(
    launched.map(({ name, shape }) => [name, shape.grid, shape.block]),
    [
      ['router_top_k', [2, 1, 1], [128, 1, 1]],
      ['router_top_k', [3, 1, 1], [128, 1, 1]],
    ],
  );
  const parameters = launched[0]!.parameters;
  assert.deepEqual(pointerAt(parameters, [0, 1, 2, 3, 4, 5, 6, 7]), [1, 2, 7, 8, 9, 10, 11, 5]);
  assert.deepEqual(int32At(parameters, [8, 9, 10, 11, 12]), [7, 256, 8, 8, moeMaxTiles(7 * 8, 256)]);
  assert.deepEqual(pointerAt(launched[1]!.parameters, [2, 3, 4, 5, 6]), [0, 0, 0, 0, 0]);
});

test('both router launchers refuse what one warp cannot route: over 512 experts, over 32 choices, more than exist', () => {
  const { cuda, launched } = recordingDevice();
  const refused = (change: Partial<typeof real> & { grouping?: typeof grouping }) => {
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
  // The grouping's tables hold at most 256 experts and the combine 16 choices.
  refused({ experts: 257, grouping });
  refused({ topK: 17, grouping });
  routerTopK(cuda, { ...pointers, ...real, experts: 512, topK: 32 });
  routerTopKQuantize(cuda, { ...pointers, ...real, experts: 512, topK: 32 });
  assert.throws(() => routerTopKQuantize(cuda, { ...pointers, ...real, cols: 0 }), /cols must be/);
  assert.equal(launched.length, 2);
});
