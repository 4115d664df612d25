// The regrouped form of a strided causal conv (src/codec/cuda/strided-conv.ts) run through the cpu CausalConv at
// stride 1 gives CausalConv's strided outputs exactly, at the encoder's kernels (K = 2s and K = s) and in passes that
// carry history: the layout the CUDA encoder uploads computes the same conv. Values are small dyadic numbers, so
// every fp64 sum is exact and any order of the products gives the same bits.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CausalConv } from '../../src/codec/conv.ts';
import { regroupedAlpha, regroupedConvWeight, regroupedKernel } from '../../src/codec/cuda/strided-conv.ts';
import { ScratchArena } from '../../src/codec/scratch.ts';

function dyadic(count: number, seed: number): Float32Array {
  let state = seed;
  return Float32Array.from({ length: count }, () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return ((state >>> 16) % 17) / 8 - 1;
  });
}

/** Channels-first [C, T] → the regrouped channels-first [s·C, T/s]: row m, channel j·C + i = x[i, m·s + j]. */
function regroup(x: Float32Array, channels: number, rows: number, stride: number): Float32Array {
  const groups = rows / stride;
  const out = new Float32Array(x.length);
  for (let input = 0; input < channels; input++) {
    for (let row = 0; row < rows; row++) {
      const phase = row % stride;
      out[(phase * channels + input) * groups + (row - phase) / stride] = x[input * rows + row]!;
    }
  }
  return out;
}

const SHAPES = [
  { inputs: 3, outputs: 5, kernel: 4, stride: 2 },
  { inputs: 4, outputs: 6, kernel: 16, stride: 8 },
  { inputs: 5, outputs: 5, kernel: 2, stride: 2 },
  { inputs: 2, outputs: 3, kernel: 8, stride: 4 },
];

for (const shape of SHAPES) {
  const { inputs, outputs, kernel, stride } = shape;
  test(`a conv of K ${kernel}, stride ${stride} equals its regrouped stride-1 form, in passes of 3 and 5 rows`, () => {
    const weight = dyadic(outputs * inputs * kernel, kernel * 7 + stride);
    const bias = dyadic(outputs, 99);
    const strided = new CausalConv(shape, weight, bias);
    const wide = { inputs: stride * inputs, outputs, kernel: regroupedKernel(shape) };
    const regrouped = new CausalConv(wide, regroupedConvWeight(weight, shape), bias);
    const scratch = new ScratchArena(false);
    for (const [pass, groups] of [3, 5].entries()) {
      const rows = groups * stride;
      const x = dyadic(inputs * rows, 1000 + pass);
      scratch.reset();
      const expected = strided.forward(x, rows, scratch).slice();
      const actual = regrouped.forward(regroup(x, inputs, rows, stride), groups, scratch);
      assert.equal(actual.length, expected.length);
      const first = expected.findIndex((value, index) => !Object.is(value, actual[index]));
      assert.equal(first, -1, `pass ${pass}: output ${first} is ${actual[first]}, not ${expected[first]}`);
      assert.ok(expected.some((value) => value !== 0));
    }
  });
}

test('the regrouped α repeats the channels once per phase, and K must be a multiple of the stride', () => {
  assert.deepEqual([...regroupedAlpha(Float32Array.of(1, 2, 3), 2)], [1, 2, 3, 1, 2, 3]);
  assert.throws(() => regroupedKernel({ inputs: 1, outputs: 1, kernel: 6, stride: 4 }), {
    code: 'CODEC_STRIDE_UNSUPPORTED',
  });
});
