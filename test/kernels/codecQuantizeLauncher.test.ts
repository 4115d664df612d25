// The quantizer encode's launcher on the host side, without a GPU: one block of 256 threads per frame, the residual
// row and three codebook vectors in dynamic shared memory, the arguments in the order kernels/cuda/codec_quantize.cuh
// declares them, refusals that name the bad size, and the stacked tables (semantic first, then each residual codebook).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import koffi from 'koffi';
import { codecQuantizerEncode, quantizerEncodeTables } from '../../src/backend/cuda/ops/codecQuantize.ts';
import { normalisedEntries } from '../../src/codec/quantizer.ts';
import { DramaError } from '../../src/errors.ts';
import { recordingDevice } from '../backend/support/recording-blocks.ts';

const tables = {
  inWeights: 4n,
  inBiases: 5n,
  entries: 6n,
  normalised: 7n,
  squares: 8n,
  outWeights: 9n,
  outBiases: 10n,
};
const sizes = { frames: 431, latent: 1024, codebookDim: 8, codebooks: 10, semanticSize: 4096, residualSize: 1024 };

test('the quantizer encode runs one block per frame with the residual row and three vectors in shared memory', () => {
  const { cuda, launched } = recordingDevice();
  codecQuantizerEncode(cuda, { codes: 1n, margins: 2n, z: 3n, ...sizes, ...tables });
  assert.equal(launched[0]!.name, 'codec_quantizer_encode');
  assert.deepEqual(launched[0]!.shape, { grid: [431, 1, 1], block: [256, 1, 1], sharedBytes: (1024 + 24) * 4 });
  const int32At = (index: number) => koffi.decode(launched[0]!.parameters[index]!, 'int32_t') as number;
  assert.deepEqual([3, 4, 5, 6, 7, 8].map(int32At), [431, 1024, 8, 10, 4096, 1024]);
  const refused = (change: Partial<typeof sizes>) =>
    assert.throws(
      () => codecQuantizerEncode(cuda, { codes: 1n, margins: 2n, z: 3n, ...sizes, ...change, ...tables }),
      (error: unknown) => error instanceof DramaError && error.code === 'KERNEL_ARGUMENT_INVALID',
    );
  refused({ frames: 0 });
  refused({ codebooks: 0 });
  refused({ latent: 10240 });
});

test("the encode tables stack every codebook's arrays in order, semantic first", () => {
  const codebook = (size: number, base: number) => {
    const entries = Float32Array.from({ length: size * 2 }, (_, index) => base + index + 1);
    return {
      entries,
      ...normalisedEntries(entries, size, 2),
      inWeight: Float32Array.from({ length: 2 * 3 }, (_, index) => base + 300 + index),
      inBias: Float32Array.from({ length: 2 }, (_, index) => base + 400 + index),
      outWeight: Float32Array.from({ length: 3 * 2 }, (_, index) => base + 100 + index),
      outBias: Float32Array.from({ length: 3 }, (_, index) => base + 200 + index),
    };
  };
  const shape = { latent: 3, codebookDim: 2, semanticSize: 3, residualSize: 2 };
  const stacked = quantizerEncodeTables([codebook(3, 0), codebook(2, 1000), codebook(2, 2000)], shape);
  assert.deepEqual([...stacked.entries], [1, 2, 3, 4, 5, 6, 1001, 1002, 1003, 1004, 2001, 2002, 2003, 2004]);
  assert.equal(stacked.squares.length, 7);
  assert.ok(
    stacked.squares.every((square) => Math.abs(square - 1) < 1e-6),
    'normalised entries have unit norm',
  );
  assert.deepEqual([...stacked.inBiases], [400, 401, 1400, 1401, 2400, 2401]);
  assert.deepEqual([...stacked.outBiases.subarray(3, 6)], [1200, 1201, 1202]);
  assert.throws(
    () => quantizerEncodeTables([codebook(2, 0)], shape),
    (error: unknown) => error instanceof DramaError && error.code === 'TENSOR_SHAPE_MISMATCH',
  );
});
