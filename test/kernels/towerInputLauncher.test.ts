// The tower input's launcher on the host side, without a GPU: one block a row, each half normed by the thread count
// rms_norm_bf16's own launch gives its width (the order of its sum of squares), the block the larger of the two; its
// arguments in the order kernels/cuda/rms_norm.cuh declares them; bad sizes refused by name before any launch.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import koffi from 'koffi';
import { rmsNorm, type TowerInputArguments, towerInput } from '../../src/backend/cuda/ops/rmsNorm.ts';
import { DramaError } from '../../src/errors.ts';
import { recordingDevice } from '../backend/support/recording-blocks.ts';

const base: TowerInputArguments = {
  out: 1n,
  codeTable: 2n,
  codeRows: 13312,
  codeCols: 1000,
  records: 3n,
  width: 11,
  codebook: 3,
  codeFirstRow: 6144,
  codeWeight: 4n,
  input: 5n,
  inputCols: 1234,
  inputWeight: 6n,
  rows: 7,
  eps: 1e-6,
};

const int32 = (parameters: BigUint64Array, index: number) => koffi.decode(parameters[index]!, 'int32_t') as number;

test('each half is normed by the threads its own norm launch has; the block holds the larger count', () => {
  const { cuda, launched } = recordingDevice();
  for (const [codeCols, inputCols] of [
    [1000, 1234],
    [1500, 1000],
    [2048, 2048],
    [20, 8192],
  ]) {
    towerInput(cuda, { ...base, codeCols: codeCols!, inputCols: inputCols! });
    const [fused] = launched.splice(0);
    const norm = { out: 1n, x: 2n, weight: 3n, rows: 7, eps: 1e-6, zeroCentred: true };
    rmsNorm(cuda, { ...norm, cols: codeCols! });
    rmsNorm(cuda, { ...norm, cols: inputCols! });
    const [codeNorm, inputNorm] = launched.splice(0);
    const codeThreads = codeNorm!.shape.block[0];
    const inputThreads = inputNorm!.shape.block[0];
    assert.equal(fused!.name, 'tower_input_bf16');
    assert.deepEqual(fused!.shape.grid, [7, 1, 1]);
    assert.deepEqual(fused!.shape.block, [Math.max(codeThreads, inputThreads), 1, 1]);
    assert.deepEqual([int32(fused!.parameters, 13), int32(fused!.parameters, 14)], [codeThreads, inputThreads]);
  }
});

test('the arguments go in the kernel’s order; f32 weights take the f32-weight kernel', () => {
  const { cuda, launched } = recordingDevice();
  towerInput(cuda, { ...base, weightDtype: 'f32' });
  const { name, parameters } = launched[0]!;
  assert.equal(name, 'tower_input_f32_weight_bf16');
  const pointer = (index: number) => BigInt(koffi.decode(parameters[index]!, 'uint64_t') as number);
  assert.deepEqual([0, 1, 2, 7, 8, 9].map(pointer), [1n, 2n, 3n, 4n, 5n, 6n]);
  assert.deepEqual(
    [3, 4, 5, 6, 10, 11, 12].map((index) => int32(parameters, index)),
    [11, 3, 6144, 13312, 7, 1000, 1234],
  );
  assert.equal(koffi.decode(parameters[15]!, 'float'), Math.fround(1e-6));
});

test('bad sizes are refused by name before anything is launched', () => {
  const { cuda, launched } = recordingDevice();
  const refused = (change: Partial<TowerInputArguments>, param: string) => {
    assert.throws(
      () => towerInput(cuda, { ...base, ...change }),
      (error: unknown) =>
        error instanceof DramaError && error.code === 'KERNEL_ARGUMENT_INVALID' && error.param === param,
    );
  };
  refused({ rows: 0 }, 'rows');
  refused({ codeCols: 0 }, 'codeCols');
  refused({ inputCols: 1.5 }, 'inputCols');
  refused({ codeRows: 0 }, 'codeRows');
  refused({ width: 1 }, 'width');
  refused({ codebook: 10 }, 'codebook');
  refused({ codeFirstRow: -1 }, 'codeFirstRow');
  refused({ weightDtype: 'f16' as never }, 'weightDtype');
  assert.equal(launched.length, 0);
});
