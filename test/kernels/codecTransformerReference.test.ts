// The codec transformer kernels' references (transformer.ts ropeRows and attendRows, the SwiGLU line of
// codecTransformerRowCases.ts) are the cpu transformer's own arithmetic: a layer rebuilt from them, the cpu norm and linears gives WindowedTransformer.forward's bits, streamed
// in chunks that cross the window and the RoPE table's end, with and without a table. Runs without a GPU.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { codecRopeFrequencies } from '../../src/backend/cuda/ops/codecTransformer.ts';
import type { CodecTransformerConfig } from '../../src/codec/config.ts';
import { linear, rmsNorm, transpose } from '../../src/codec/rows.ts';
import { ScratchArena } from '../../src/codec/scratch.ts';
import { attendRows, ropeRows, type TransformerWeights, WindowedTransformer } from '../../src/codec/transformer.ts';
import { referenceSwiGlu } from './support/codecTransformerRowCases.ts';
import { Random, randomFloat32 } from './support/random.ts';

const config: CodecTransformerConfig = {
  layers: 2,
  dim: 24,
  heads: 2,
  headDim: 6,
  intermediate: 20,
  window: 5,
  ropeBase: 10000,
  normEps: 1e-5,
};

function weightsOf(random: Random, ropeTable: Float32Array | undefined): TransformerWeights {
  const { dim, heads, headDim, intermediate } = config;
  const width = heads * headDim;
  const layers = Array.from({ length: config.layers }, () => ({
    wqkv: randomFloat32(random, 3 * width * dim, 0.3),
    wo: randomFloat32(random, dim * width, 0.3),
    w1: randomFloat32(random, intermediate * dim, 0.3),
    w2: randomFloat32(random, dim * intermediate, 0.3),
    w3: randomFloat32(random, intermediate * dim, 0.3),
    attentionNorm: randomFloat32(random, dim, 1),
    ffnNorm: randomFloat32(random, dim, 1),
    attentionScale: randomFloat32(random, dim, 0.5),
    ffnScale: randomFloat32(random, dim, 0.5),
  }));
  return { config, layers, norm: randomFloat32(random, dim, 1), ropeTable };
}

/** One chunk through every layer from the references, each layer's ring carried in `rings`. */
function rebuiltForward(
  weights: TransformerWeights,
  rings: { keys: Float32Array; values: Float32Array }[],
  x: Float32Array,
  rows: number,
  start: number,
): Float32Array {
  const { dim, heads, headDim, intermediate, normEps } = config;
  const width = heads * headDim;
  const scratch = new ScratchArena();
  let hidden = transpose(x, dim, rows, scratch);
  weights.layers.forEach((layer, index) => {
    const normed = rmsNorm(hidden, rows, dim, layer.attentionNorm, normEps, scratch);
    const qkv = linear(normed, rows, dim, 3 * width, layer.wqkv, undefined, scratch);
    ropeRows(qkv, 0, rows, start, config, weights.ropeTable);
    const attended = new Float32Array(rows * width);
    attendRows(attended, qkv, 0, rows, start, rings[index]!.keys, rings[index]!.values, config);
    const attentionOut = linear(attended, rows, width, dim, layer.wo, undefined, scratch);
    const after = new Float32Array(rows * dim);
    for (let i = 0; i < rows * dim; i++) after[i] = hidden[i]! + attentionOut[i]! * layer.attentionScale[i % dim]!;
    const ffnInput = rmsNorm(after, rows, dim, layer.ffnNorm, normEps, scratch);
    const gate = linear(ffnInput, rows, dim, intermediate, layer.w1, undefined, scratch);
    const up = linear(ffnInput, rows, dim, intermediate, layer.w3, undefined, scratch);
    const gateUp = new Float32Array(rows * 2 * intermediate);
    for (let row = 0; row < rows; row++) {
      gateUp.set(gate.subarray(row * intermediate, (row + 1) * intermediate), row * 2 * intermediate);
      gateUp.set(up.subarray(row * intermediate, (row + 1) * intermediate), (row * 2 + 1) * intermediate);
    }
    const ffnOut = linear(
      referenceSwiGlu(gateUp, rows, intermediate),
      rows,
      intermediate,
      dim,
      layer.w2,
      undefined,
      scratch,
    );
    const out = new Float32Array(rows * dim);
    for (let i = 0; i < rows * dim; i++) out[i] = after[i]! + ffnOut[i]! * layer.ffnScale[i % dim]!;
    hidden = out;
  });
  return transpose(rmsNorm(hidden, rows, dim, weights.norm, normEps, scratch), rows, dim, scratch).slice();
}

for (const tabled of [false, true]) {
  test(`the references rebuild WindowedTransformer.forward bit for bit (${tabled ? 'with' : 'without'} a RoPE table)`, () => {
    const random = new Random(tabled ? 11 : 7);
    const table = tabled ? randomFloat32(random, 9 * config.headDim, 1) : undefined;
    const weights = weightsOf(random, table);
    const cpu = new WindowedTransformer(weights);
    const width = config.heads * config.headDim;
    const rings = weights.layers.map(() => ({
      keys: new Float32Array(config.window * width),
      values: new Float32Array(config.window * width),
    }));
    let start = 0;
    for (const rows of [3, 1, 8, 4, 11]) {
      const x = randomFloat32(random, config.dim * rows, 1);
      const expected = cpu.forward(x, rows, new ScratchArena()).slice();
      const actual = rebuiltForward(weights, rings, x, rows, start);
      assert.deepEqual(
        new Uint32Array(actual.buffer),
        new Uint32Array(expected.buffer),
        `chunk of ${rows} at ${start}`,
      );
      start += rows;
    }
  });
}

test('codecRopeFrequencies gives the divisor applyRope divides each position by', () => {
  const frequencies = codecRopeFrequencies(10000, 64);
  assert.equal(frequencies.length, 32);
  for (let pair = 0; pair < 32; pair++) assert.equal(frequencies[pair], 10000 ** ((2 * pair) / 64));
  assert.equal(frequencies[0], 1);
  // A rotation at a position from the divisor equals the reference's own angle, bit for bit.
  const geometry = { heads: 1, headDim: 4, window: 1, ropeBase: 500 };
  const divisors = codecRopeFrequencies(500, 4);
  for (const position of [0, 1, 77, 1000, 123456]) {
    const row = Float32Array.from([1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    ropeRows(row, 0, 1, position, { ...geometry }, undefined);
    const expected = [0, 1].map((pair) => Math.fround(Math.cos(position / divisors[pair]!)));
    assert.deepEqual([row[0], row[2]], expected, `cos at ${position}`);
  }
});
