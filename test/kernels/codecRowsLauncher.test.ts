// The codec conv epilogue's and row kernels' launchers on the host side, without a GPU: which conv kernel a call
// gets (narrow for up to 8 outputs unless a variant or a control kernel is named), the grids, the arguments in the
// order kernels/cuda/codec_conv.cuh and codec_rows.cuh declare them, argument checks that name the bad value, and
// the quantizer's stacked tables.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import koffi from 'koffi';
import { codecConv, codecTransposedConv } from '../../src/backend/cuda/ops/codecConv.ts';
import {
  codecDepthwiseConv,
  codecLayerNorm,
  codecQuantizerDecode,
  quantizerTables,
} from '../../src/backend/cuda/ops/codecRows.ts';
import { DramaError } from '../../src/errors.ts';
import { type Launched, recordingDevice } from '../backend/support/recording-blocks.ts';

const int32At = (launch: Launched, index: number) => koffi.decode(launch.parameters[index]!, 'int32_t') as number;
const pointerAt = (launch: Launched, index: number) =>
  BigInt(koffi.decode(launch.parameters[index]!, 'uint64_t') as number | bigint);

const call = { sequences: 9n, sequenceCount: 3, longestSequence: 2, rowScale: 2048 };
const lastConv = {
  ...call,
  ...{ out: 1n, outStride: 1, x: 2n, xStride: 96, weight: 3n, bias: 4n, alpha: 5n, history: 6n },
  ...{ inputs: 96, outputs: 1, kernel: 7, dilation: 1, activation: 'tanh' as const, precision: 'f32' as const },
};

test('a conv of at most 8 outputs runs the narrow kernel: 128 rows a block for one output, shared rows to match', () => {
  const { cuda, launched } = recordingDevice();
  codecConv(cuda, lastConv);
  assert.equal(launched[0]!.name, 'codec_conv_narrow_f32');
  assert.deepEqual(launched[0]!.shape, { grid: [32, 1, 3], block: [128, 1, 1], sharedBytes: (128 + 6) * 33 * 4 });
  codecConv(cuda, { ...lastConv, outputs: 3, outStride: 3, precision: 'f16-weights' });
  assert.equal(launched[1]!.name, 'codec_conv_narrow_f16w');
  assert.deepEqual(launched[1]!.shape.grid, [Math.ceil(4096 / 42), 1, 3], '⌊128 / 3⌋ = 42 rows a block');
  codecConv(cuda, { ...lastConv, outputs: 8, outStride: 8 });
  assert.equal(launched[2]!.name, 'codec_conv_narrow_f32', 'eight outputs are still narrow');
});

test('the narrow conv raises its shared-memory limit before a launch past 48 KiB (its rows 33 floats apart)', () => {
  const { cuda, launched } = recordingDevice();
  const limits: number[] = [];
  Object.assign(cuda.driver, { setMaxDynamicSharedBytes: (_kernel: unknown, bytes: number) => limits.push(bytes) });
  codecConv(cuda, lastConv);
  // 7 taps at dilation 42: 252 carried rows, (128 + 252) × 33 floats = 50160 bytes.
  codecConv(cuda, { ...lastConv, dilation: 42 });
  assert.deepEqual(launched[1]!.shape.sharedBytes, (128 + 252) * 33 * 4);
  assert.deepEqual(limits, [(128 + 252) * 33 * 4], 'raised for the second launch only');
});

test('nine outputs with a kernel past 8 taps or a named variant run the chunked conv; a control on its grid', () => {
  const { cuda, launched } = recordingDevice();
  codecConv(cuda, { ...lastConv, outputs: 9, outStride: 9, kernel: 9 });
  codecConv(cuda, { ...lastConv, variant: 'chunked' });
  const control = { family: 'codec_controls', name: 'control_codec_conv_narrow_taps_reversed' };
  codecConv(cuda, lastConv, { kernel: control });
  assert.deepEqual(
    launched.map((launch) => launch.name),
    ['codec_conv_f32', 'codec_conv_f32', 'control_codec_conv_narrow_taps_reversed'],
  );
  assert.deepEqual(launched[2]!.shape.grid, [32, 1, 3]);
  assert.deepEqual(launched[1]!.shape, { grid: [1, 512, 3], block: [128, 1, 1], sharedBytes: (8 + 6) * 32 * 4 });
  assert.deepEqual(launched[0]!.shape.sharedBytes, (8 + 8) * 32 * 4, 'eight rows and the 9-tap history');
  assert.throws(
    () => codecConv(cuda, { ...lastConv, outputs: 9, outStride: 9, variant: 'narrow' }),
    (error: unknown) => error instanceof DramaError && error.code === 'KERNEL_ARGUMENT_INVALID',
  );
});

test('a conv of more than 8 outputs and at most 8 taps runs the register-tiled kernel: 128 × 64 a block', () => {
  const { cuda, launched } = recordingDevice();
  codecConv(cuda, { ...lastConv, outputs: 768, outStride: 768, dilation: 9 });
  codecConv(cuda, { ...lastConv, outputs: 9, outStride: 9, rowScale: 1, kernel: 1, precision: 'f16-weights' });
  assert.deepEqual(
    launched.map((launch) => launch.name),
    ['codec_conv_tiled_f32', 'codec_conv_tiled_f16w'],
  );
  // 2 × 2048 rows in tiles of 64; two stages of fp32 weights [8, 7, 128] and inputs [8, 64 + 54, padded odd].
  const shared = 2 * 8 * 7 * 128 * 4 + 8 * (64 + 54 + 1) * 4;
  assert.deepEqual(launched[0]!.shape, { grid: [6, 64, 3], block: [128, 1, 1], sharedBytes: shared });
  assert.throws(
    () => codecConv(cuda, { ...lastConv, outputs: 9, outStride: 9, kernel: 9, variant: 'tiled' }),
    (error: unknown) => error instanceof DramaError && error.code === 'KERNEL_ARGUMENT_INVALID',
  );
});

test('a transposed conv whose stride divides 8 and its kernel runs tiled, others chunked; a control on its grid', () => {
  const { cuda, launched } = recordingDevice();
  const transposed = {
    ...call,
    ...{ out: 1n, outStride: 768, x: 2n, xStride: 1536, weight: 3n, bias: 4n, alpha: 5n, history: 6n },
    ...{ inputs: 1536, outputs: 768, kernel: 16, stride: 8, precision: 'f32' as const, rowScale: 4 },
  };
  codecTransposedConv(cuda, transposed);
  codecTransposedConv(cuda, { ...transposed, kernel: 7, stride: 3 });
  codecTransposedConv(cuda, transposed, { kernel: { family: 'codec_controls', name: 'control_x' } });
  assert.deepEqual(
    launched.map((launch) => launch.name),
    ['codec_transposed_conv_tiled_f32', 'codec_transposed_conv_f32', 'control_x'],
  );
  // 2 × 4 input rows in tiles of 64 / 8 = 8; two stages of four channels' weights [16, 128], inputs [8 + 1].
  const shape = { grid: [6, 1, 3], block: [128, 1, 1], sharedBytes: 2 * 4 * 16 * 128 * 4 + 4 * 9 * 4 };
  assert.deepEqual(launched[0]!.shape, shape);
  assert.deepEqual(launched[2]!.shape, shape);
  assert.throws(
    () => codecTransposedConv(cuda, { ...transposed, kernel: 7, stride: 3, variant: 'tiled' }),
    (error: unknown) => error instanceof DramaError && error.code === 'KERNEL_ARGUMENT_INVALID',
  );
});

test('the conv epilogue: absent bias and scale pass null, the scale sits after the residual stride, GELU is 2', () => {
  const { cuda, launched } = recordingDevice();
  codecConv(cuda, { ...lastConv, bias: undefined, outputs: 16, outStride: 16, activation: 'gelu' });
  codecConv(cuda, { ...lastConv, residual: 7n, residualStride: 1, scale: 8n });
  const [unbiased, scaled] = launched;
  assert.equal(pointerAt(unbiased!, 5), 0n, 'no bias');
  assert.equal(pointerAt(unbiased!, 9), 0n, 'no scale');
  assert.equal(int32At(unbiased!, 17), 2, 'gelu');
  assert.equal(pointerAt(scaled!, 7), 7n, 'residual');
  assert.equal(pointerAt(scaled!, 9), 8n, 'scale');
  assert.equal(int32At(scaled!, 17), 1, 'tanh');
});

test('the depthwise conv, LayerNorm and quantizer grids follow the sizes only', () => {
  const { cuda, launched } = recordingDevice();
  const depthwise = { out: 1n, x: 2n, weight: 3n, bias: 4n, history: 5n, channels: 1024, kernel: 7 };
  codecDepthwiseConv(cuda, { ...call, longestSequence: 5, rowScale: 4, ...depthwise });
  codecLayerNorm(cuda, { out: 1n, x: 2n, weight: 3n, bias: 4n, rows: 37, width: 1024, eps: 1e-6 });
  const tables = { semanticEntries: 3n, residualEntries: 4n, outWeights: 5n, outBiases: 6n };
  const sizes = { frames: 70000, latent: 1024, codebookDim: 8, codebooks: 10, semanticSize: 4096, residualSize: 1024 };
  codecQuantizerDecode(cuda, { out: 1n, codes: 2n, ...sizes, ...tables });
  assert.deepEqual(
    launched.map((launch) => [launch.name, launch.shape]),
    [
      ['codec_depthwise_conv', { grid: [8, 3, 3], block: [128, 1, 1] }],
      ['codec_layer_norm', { grid: [37, 1, 1], block: [256, 1, 1] }],
      ['codec_quantizer_decode', { grid: [8, 65535, 1], block: [128, 1, 1] }],
    ],
  );
  assert.equal(int32At(launched[0]!, 8), 7, 'kernel is the last argument');
  assert.equal(int32At(launched[2]!, 5), 10, 'codebooks');
  const refused = (work: () => void) =>
    assert.throws(work, (error: unknown) => error instanceof DramaError && error.code === 'KERNEL_ARGUMENT_INVALID');
  refused(() => codecLayerNorm(cuda, { out: 1n, x: 2n, weight: 3n, bias: 4n, rows: 1, width: 8, eps: 0 }));
  refused(() => codecLayerNorm(cuda, { out: 1n, x: 2n, weight: 3n, bias: 4n, rows: 0, width: 8, eps: 1e-6 }));
  refused(() => codecDepthwiseConv(cuda, { ...call, ...depthwise, kernel: 0 }));
  refused(() => codecQuantizerDecode(cuda, { out: 1n, codes: 2n, ...sizes, ...tables, codebooks: 0 }));
});

test("the quantizer's tables stack the residual entries, every out_proj weight and bias in codebook order", () => {
  const codebook = (size: number, base: number) => ({
    entries: Float32Array.from({ length: size * 2 }, (_, index) => base + index),
    outWeight: Float32Array.from({ length: 3 * 2 }, (_, index) => base + 100 + index),
    outBias: Float32Array.from({ length: 3 }, (_, index) => base + 200 + index),
  });
  const shape = { latent: 3, codebookDim: 2, semanticSize: 4, residualSize: 2 };
  const tables = quantizerTables(codebook(4, 0), [codebook(2, 1000), codebook(2, 2000)], shape);
  assert.deepEqual([...tables.semanticEntries], [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual([...tables.residualEntries], [1000, 1001, 1002, 1003, 2000, 2001, 2002, 2003]);
  assert.deepEqual([...tables.outWeights.subarray(6, 12)], [1100, 1101, 1102, 1103, 1104, 1105]);
  assert.deepEqual([...tables.outBiases], [200, 201, 202, 1200, 1201, 1202, 2200, 2201, 2202]);
  assert.throws(
    () => quantizerTables(codebook(4, 0), [codebook(3, 1000)], shape),
    (error: unknown) => error instanceof DramaError && error.code === 'TENSOR_SHAPE_MISMATCH',
  );
});
