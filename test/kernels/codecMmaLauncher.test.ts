// The `f16` precision's host side, without a GPU: a transposed conv equals the conv of s·Cout outputs it is run as
// on tensor cores (its weights laid out by codecTransposedAsConvLayout, its bias repeated per phase), through the
// cpu codec's own convs; and which kernel, grid and shared memory each f16 layer gets, with the refusals.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import koffi from 'koffi';
import {
  codecConv,
  codecTransposedConv,
  mmaSharedBytes,
  mmaStagedBytes,
  mmaStagedStride,
} from '../../src/backend/cuda/ops/codecConv.ts';
import { codecTransposedAsConvLayout, repeatedBias } from '../../src/backend/cuda/ops/codecWeightLayout.ts';
import { DramaError } from '../../src/errors.ts';
import { type Launched, recordingDevice } from '../backend/support/recording-blocks.ts';
import { cpuConv, cpuTransposedConv } from './support/codecCases.ts';
import { randomFloat32, streamOf } from './support/random.ts';

/** The laid [Cin, m, s·Cout] back in the cpu CausalConv's PyTorch layout [s·Cout, Cin, m]. */
function asPyTorchConv(laid: Float32Array, inputs: number, taps: number, outputs: number): Float32Array {
  const weight = new Float32Array(laid.length);
  for (let input = 0; input < inputs; input++) {
    for (let tap = 0; tap < taps; tap++) {
      for (let output = 0; output < outputs; output++)
        weight[(output * inputs + input) * taps + tap] = laid[(input * taps + tap) * outputs + output]!;
    }
  }
  return weight;
}

for (const [inputs, outputs, kernel, stride] of [
  [5, 3, 8, 4],
  [7, 6, 4, 2],
  [4, 5, 2, 2],
  [3, 2, 16, 8],
] as const) {
  test(`a transposed conv ${inputs}→${outputs} k${kernel} s${stride} equals its conv of ${stride * outputs} outputs`, () => {
    const random = streamOf(5, kernel);
    const taps = kernel / stride;
    const rows = 9;
    const weight = randomFloat32(random, inputs * outputs * kernel, 0.5);
    const bias = randomFloat32(random, outputs, 0.1);
    const history = randomFloat32(random, (taps - 1) * inputs, 1);
    const x = randomFloat32(random, rows * inputs, 1);
    const shape = { inputs, outputs, kernel, stride };
    const expected = cpuTransposedConv(shape, weight, bias, history, taps - 1, x, rows);
    const laid = codecTransposedAsConvLayout(weight, inputs, outputs, kernel, stride);
    const conv = { inputs, outputs: stride * outputs, kernel: taps, dilation: 1 };
    const pytorch = asPyTorchConv(laid, inputs, taps, stride * outputs);
    const actual = cpuConv(conv, pytorch, repeatedBias(bias, stride), history, x, rows);
    assert.equal(actual.length, expected.length);
    for (let index = 0; index < expected.length; index++) {
      const tolerance = 1e-6 * (1 + Math.abs(expected[index]!));
      assert.ok(Math.abs(actual[index]! - expected[index]!) <= tolerance, `element ${index}`);
    }
  });
}

const call = { sequences: 9n, sequenceCount: 3, longestSequence: 2, rowScale: 256 };
const residualConv = {
  ...call,
  ...{ out: 1n, outStride: 384, x: 2n, xStride: 384, weight: 3n, bias: 4n, alpha: 5n, history: 6n },
  ...{ inputs: 384, outputs: 384, kernel: 7, dilation: 3, precision: 'f16' as const },
};

test('f16 convs run on tensor cores: 128 rows × 128 outputs a block, 256 threads; few outputs stay narrow', () => {
  const { cuda, launched } = recordingDevice();
  codecConv(cuda, residualConv);
  codecConv(cuda, { ...residualConv, outputs: 1, outStride: 1 });
  assert.deepEqual(
    launched.map((launch) => launch.name),
    ['codec_conv_mma_f16', 'codec_conv_narrow_f16w'],
  );
  // The tile rows' rows of out, then two fp16 weight stages [7 taps][16 channels][136], the fp16 input tile
  // [128 + 18 rows][24] and the next stage's raw fp32 inputs [128 + 18 rows][16] (more than the epilogue's sums).
  const shared = 8 * 128 + 2 * (2 * 7 * 16 * 136 + (128 + 18) * 24) + 4 * (128 + 18) * 16;
  assert.equal(mmaSharedBytes(7, 18, 384), shared);
  assert.deepEqual(launched[0]!.shape, { grid: [3, 4, 3], block: [256, 1, 1], sharedBytes: shared });
  for (const variant of ['chunked', 'tiled'] as const) {
    assert.throws(
      () => codecConv(cuda, { ...residualConv, variant }),
      (error: unknown) => error instanceof DramaError && error.code === 'KERNEL_ARGUMENT_INVALID',
    );
  }
  assert.throws(
    () => codecConv(cuda, { ...residualConv, precision: 'f32', variant: 'mma' }),
    (error: unknown) => error instanceof DramaError && error.code === 'KERNEL_ARGUMENT_INVALID',
  );
});

test('f16 convs of at most 64 outputs take the tall block: 256 rows × 64 outputs, every warp along rows', () => {
  const { cuda, launched } = recordingDevice();
  const encoderConv = { ...residualConv, inputs: 64, outputs: 64, outStride: 64, xStride: 64, dilation: 9 };
  codecConv(cuda, encoderConv);
  codecConv(cuda, { ...encoderConv, kernel: 1, dilation: 1 });
  codecConv(cuda, { ...encoderConv, outputs: 65, outStride: 65 });
  assert.deepEqual(
    launched.map((launch) => launch.name),
    ['codec_conv_mma_f16', 'codec_conv_mma_f16', 'codec_conv_mma_f16'],
  );
  // 3 lanes of 2 × 256 rows in tiles of 256; weight rows of 64 outputs + 8; 16 channels a stage at k = 7; the rows
  // table first, and the epilogue's sums [256][64 + 8] fp32 where they outgrow the stages.
  const dilated = 8 * 256 + Math.max(2 * (2 * 7 * 16 * 72 + (256 + 54) * 24) + 4 * (256 + 54) * 16, 4 * 256 * 72);
  assert.equal(mmaSharedBytes(7, 54, 64), dilated);
  assert.deepEqual(launched[0]!.shape, { grid: [1, 2, 3], block: [256, 1, 1], sharedBytes: dilated });
  // At k = 1 the tall block stages 32 channels, half the wide block's 64.
  const pointwise = 8 * 256 + Math.max(2 * (2 * 1 * 32 * 72 + 256 * 40) + 4 * 256 * 32, 4 * 256 * 72);
  assert.equal(mmaSharedBytes(1, 0, 64), pointwise);
  assert.equal(mmaSharedBytes(1, 0, 65), 8 * 128 + 2 * (2 * 1 * 64 * 136 + 128 * 72) + 4 * 128 * 64);
  assert.deepEqual(launched[1]!.shape, { grid: [1, 2, 3], block: [256, 1, 1], sharedBytes: pointwise });
  // 65 outputs: the wide block, 128 rows × 128 outputs.
  assert.deepEqual(launched[2]!.shape.grid, [1, 4, 3]);
});

test('an f16 transposed conv runs as the tensor-core conv of its input rows with s·Cout outputs', () => {
  const { cuda, launched } = recordingDevice();
  const transposed = {
    ...call,
    ...{ out: 1n, outStride: 384, x: 2n, xStride: 768, weight: 3n, bias: 4n, alpha: 5n, history: 6n },
    ...{ inputs: 768, outputs: 384, kernel: 8, stride: 4, precision: 'f16' as const },
  };
  codecTransposedConv(cuda, transposed);
  assert.equal(launched[0]!.name, 'codec_conv_mma_f16');
  // 4 · 384 outputs in blocks of 128; 2 × 256 input rows in tiles of 128; a 2-tap conv carries one row.
  assert.deepEqual(launched[0]!.shape, {
    grid: [12, 4, 3],
    block: [256, 1, 1],
    sharedBytes: mmaSharedBytes(2, 1, 1536),
  });
  assert.throws(
    () => codecTransposedConv(cuda, { ...transposed, kernel: 7, stride: 3 }),
    (error: unknown) => error instanceof DramaError && error.code === 'KERNEL_ARGUMENT_INVALID',
  );
  assert.throws(
    () => codecTransposedConv(cuda, { ...transposed, outStride: 400 }),
    (error: unknown) => error instanceof DramaError && error.code === 'KERNEL_ARGUMENT_INVALID',
  );
});

test('an f16 conv of few rows splits its channel groups across blocks when it has partials, then combines them', () => {
  const { cuda, launched } = recordingDevice();
  const oneFrame = { ...residualConv, sequenceCount: 1, longestSequence: 1, rowScale: 32 };
  const partials = { pointer: 7n, rows: 32, bytes: 6 * 32 * 384 * 4 };
  codecConv(cuda, { ...oneFrame, partials });
  assert.deepEqual(
    launched.map((launch) => launch.name),
    ['codec_conv_mma_split_f16', 'codec_conv_combine'],
  );
  // 384 inputs in 6 groups of 64, each over the 3 output blocks; the combine: 128 outputs × 8 rows a block.
  assert.deepEqual(launched[0]!.shape.grid, [18, 1, 1]);
  assert.deepEqual(launched[1]!.shape, { grid: [3, 4, 1], block: [128, 1, 1], sharedBytes: 0 });
  codecConv(cuda, oneFrame);
  codecConv(cuda, { ...oneFrame, partials: { ...partials, bytes: partials.bytes - 4 } });
  codecConv(cuda, { ...residualConv, rowScale: 4096, partials: { pointer: 7n, rows: 2 * 3 * 4096, bytes: 2 ** 40 } });
  assert.deepEqual(
    launched.slice(2).map((launch) => launch.name),
    ['codec_conv_mma_f16', 'codec_conv_mma_f16', 'codec_conv_mma_f16'],
    'without partials, without room for them, or with enough blocks unsplit',
  );
  assert.throws(
    () => codecConv(cuda, { ...oneFrame, variant: 'mma-split' }),
    (error: unknown) => error instanceof DramaError && error.code === 'KERNEL_ARGUMENT_INVALID',
  );
});

test('an f16 conv with room for its staged inputs stages them once, then the staged conv copies them', () => {
  const { cuda, launched } = recordingDevice();
  // 3 lanes of 2 × 256 rows; 384 inputs (already a multiple of 8); 18 carried rows a lane.
  const rows = 3 * 2 * 256;
  const bytes = mmaStagedBytes(rows, 3, 384, 18);
  assert.equal(bytes, (rows + 3 * 18) * 384 * 2);
  assert.equal(mmaStagedStride(37), 40);
  codecConv(cuda, { ...residualConv, staged: { pointer: 4096n, rows, bytes } });
  assert.deepEqual(
    launched.map((launch) => launch.name),
    ['codec_conv_stage_f16', 'codec_conv_mma_staged_f16'],
  );
  // The staging: a block per 32 of a lane's 512 rows and 18 carried rows, 256 threads, a lane per z.
  assert.deepEqual(launched[0]!.shape, {
    grid: [Math.ceil((512 + 18) / 32), 1, 3],
    block: [256, 1, 1],
    sharedBytes: 0,
  });
  // The rows table, two weight stages and two fp16 input tiles, no raw fp32 tile.
  const shared = 8 * 128 + 2 * 2 * 7 * 16 * 136 + 2 * 2 * (128 + 18) * 24;
  assert.equal(mmaSharedBytes(7, 18, 384, true), shared);
  assert.deepEqual(launched[1]!.shape, { grid: [3, 4, 3], block: [256, 1, 1], sharedBytes: shared });
  // Split with room for both: staged, then the staged split conv and its combine.
  const oneFrame = { ...residualConv, sequenceCount: 1, longestSequence: 1, rowScale: 32 };
  const partials = { pointer: 7n, rows: 32, bytes: 6 * 32 * 384 * 4 };
  codecConv(cuda, {
    ...oneFrame,
    partials,
    staged: { pointer: 4096n, rows: 32, bytes: mmaStagedBytes(32, 1, 384, 18) },
  });
  assert.deepEqual(
    launched.slice(2).map((launch) => launch.name),
    ['codec_conv_stage_f16', 'codec_conv_mma_staged_split_f16', 'codec_conv_combine'],
  );
  // One byte short: each block stages its own inputs (the same bits).
  codecConv(cuda, { ...residualConv, staged: { pointer: 4096n, rows, bytes: bytes - 1 } });
  assert.deepEqual(
    launched.slice(5).map((launch) => launch.name),
    ['codec_conv_mma_f16'],
  );
});

/** The tensor-core conv's staging arguments: the staged rows, the padded rows, the stride, the sequences, flat. */
function stagingArguments(launch: Launched) {
  const at = (index: number, type: string) => koffi.decode(launch.parameters[index]!, type) as number | bigint;
  return [
    BigInt(at(20, 'uint64_t')),
    BigInt(at(21, 'int64_t')),
    at(22, 'int32_t'),
    at(23, 'int32_t'),
    at(24, 'int32_t'),
  ];
}

test('a staged f16 conv of many short lanes tiles the call flat: its padded rows as one sequence', () => {
  const { cuda, launched } = recordingDevice();
  // 64 lanes of one 32-row frame, 18 carried rows each: 64 tiles of 128 rows a lane, or 25 over 64 · 50 padded rows.
  const lanes = { ...residualConv, sequenceCount: 64, longestSequence: 1, rowScale: 32 };
  const staged = { pointer: 4096n, rows: 64 * 32, bytes: mmaStagedBytes(64 * 32, 64, 384, 18) };
  codecConv(cuda, { ...lanes, staged });
  assert.deepEqual(launched[1]!.shape.grid, [3, 25, 1]);
  assert.deepEqual(stagingArguments(launched[1]!), [4096n, 64n * 50n, 384, 64, 1]);
  // Lanes of 512 rows: 4 tiles a lane (12) is fewer than 13 flat, so each lane keeps its own tiles.
  const rows = 3 * 512;
  codecConv(cuda, { ...residualConv, staged: { pointer: 4096n, rows, bytes: mmaStagedBytes(rows, 3, 384, 18) } });
  assert.deepEqual(launched[3]!.shape.grid, [3, 4, 3]);
  assert.deepEqual(stagingArguments(launched[3]!), [4096n, BigInt(rows + 54), 384, 3, 0]);
});
