// The cpu backend's MoE block with the residual add and norm after it (the step the backbone asks for, which the cuda
// backend runs as one launch): the bits of moe, then addZeroCentredRmsNorm, in every precision, for the residual
// written back and the normed rows, also where the normed rows overwrite the block's input (as the backbone's are).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CpuBackend } from '../../../src/backend/cpu/backend.ts';
import type { CpuBuffer, CpuTensor } from '../../../src/backend/cpu/tensors.ts';
import type { MoeWeights } from '../../../src/backend/types.ts';
import { roundToBf16 } from '../../../src/numeric/dtypes.ts';
import type { FloatArray } from '../../../src/numeric/float-array.ts';

const ROWS = 5;
const HIDDEN = 24;
const INTERMEDIATE = 16;
const SHARED = 12;
const EXPERTS = 6;
const EPS = 1e-6;

function values(count: number, seed: number, scale = 1): Float32Array {
  let state = seed;
  return Float32Array.from({ length: count }, () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return roundToBf16(scale * (state / 2 ** 31 - 1));
  });
}

function setUp(precision: 'bf16' | 'fp32' | 'fp64') {
  const backend = new CpuBackend({ precision });
  let seed = 1;
  const tensor = (shape: number[], scale: number): CpuTensor =>
    backend.fromHost('f32', shape, values(shape[0]! * (shape[1] ?? 1), seed++, scale));
  const mlp = (width: number) => ({
    gate: tensor([width, HIDDEN], 0.5),
    up: tensor([width, HIDDEN], 0.5),
    down: tensor([HIDDEN, width], 0.5),
  });
  const weights: MoeWeights<CpuBuffer> = {
    router: tensor([EXPERTS, HIDDEN], 1),
    experts: Array.from({ length: EXPERTS }, () => mlp(INTERMEDIATE)),
    topK: 2,
    shared: mlp(SHARED),
    sharedGate: tensor([1, HIDDEN], 0.5),
  };
  const rows = (seedOf: number, scale: number) => {
    const data = backend.allocate('bf16', [ROWS, HIDDEN]).data as FloatArray;
    data.set(values(ROWS * HIDDEN, seedOf, scale));
    return data;
  };
  return { backend, weights, norm: tensor([HIDDEN], 0.1), input: rows(100, 2), residual: rows(101, 3), rows };
}

for (const precision of ['bf16', 'fp32', 'fp64'] as const) {
  test(`${precision}: the MoE block with the add and norm after it has the bits of moe then the add and norm`, () => {
    const { backend, weights, norm, input, residual, rows } = setUp(precision);
    const separateResidual = residual.slice();
    const moeOut = rows(0, 0);
    const separateNormed = rows(0, 0);
    backend.moe(weights, input, moeOut, ROWS);
    backend.addZeroCentredRmsNorm(separateResidual, moeOut, norm, separateNormed, ROWS, HIDDEN, EPS);
    assert.ok(
      moeOut.some((value) => value !== 0),
      'the block wrote nothing: the comparison would prove nothing',
    );

    const fusedResidual = residual.slice();
    const fusedNormed = rows(0, 0);
    backend.moeAddZeroCentredRmsNorm(weights, input, fusedResidual, norm, fusedNormed, ROWS, HIDDEN, EPS);
    assert.deepEqual(Array.from(fusedResidual), Array.from(separateResidual));
    assert.deepEqual(Array.from(fusedNormed), Array.from(separateNormed));

    // The backbone norms into the block's own input rows.
    const inPlaceResidual = residual.slice();
    const inPlace = input.slice();
    backend.moeAddZeroCentredRmsNorm(weights, inPlace, inPlaceResidual, norm, inPlace, ROWS, HIDDEN, EPS);
    assert.deepEqual(Array.from(inPlaceResidual), Array.from(separateResidual));
    assert.deepEqual(Array.from(inPlace), Array.from(separateNormed));
  });
}
