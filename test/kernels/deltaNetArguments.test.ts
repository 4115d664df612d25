// The Gated DeltaNet launchers (the decode combine's too) refuse bad sizes by name before anything reaches the device
// (runs without a GPU), and the sequence tables the contract builds follow LAYOUT.md.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CudaContext } from '../../src/backend/cuda/context.ts';
import { deltaNetConv, deltaNetGates, deltaNetRecurrence } from '../../src/backend/cuda/ops/deltaNet.ts';
import { combinesIntoDeltaNet, deltaNetSegmentsCombine } from '../../src/backend/cuda/ops/deltaNetCombine.ts';
import type { LeftCombine } from '../../src/backend/cuda/ops/gemmSegments.ts';
import { chunkTable, sequenceTable } from './support/deltaNetCases.ts';

// Argument checks run before the launcher touches the context, so none is needed.
const noDevice = {} as CudaContext;

function refusal(param: string) {
  return (error: unknown) => {
    const named = error as { code?: string; param?: string };
    return named.code === 'KERNEL_ARGUMENT_INVALID' && named.param === param;
  };
}

const conv = {
  out: 1n,
  outRowStride: 8192,
  x: 2n,
  xRowStride: 12352,
  weight: 3n,
  convState: 4n,
  sequences: 5n,
  sequenceCount: 1,
  longestSequence: 1,
  channels: 8192,
};

test('the conv launcher names a bad size, stride or sequence count', () => {
  assert.throws(() => deltaNetConv(noDevice, { ...conv, channels: 0 }), refusal('channels'));
  assert.throws(() => deltaNetConv(noDevice, { ...conv, xRowStride: 8191 }), refusal('xRowStride'));
  assert.throws(() => deltaNetConv(noDevice, { ...conv, outRowStride: 100 }), refusal('outRowStride'));
  assert.throws(() => deltaNetConv(noDevice, { ...conv, sequenceCount: 70000 }), refusal('sequenceCount'));
  assert.throws(() => deltaNetConv(noDevice, { ...conv, longestSequence: 1.5 }), refusal('longestSequence'));
});

test('the gates launcher names a bad size or stride', () => {
  const gates = { g: 1n, beta: 2n, b: 3n, a: 4n, rowStride: 12352, aLog: 5n, dtBias: 6n, rows: 1, valueHeads: 32 };
  assert.throws(() => deltaNetGates(noDevice, { ...gates, rows: 0 }), refusal('rows'));
  assert.throws(() => deltaNetGates(noDevice, { ...gates, rowStride: 31 }), refusal('rowStride'));
});

const recurrence = {
  out: 1n,
  qkv: 0x1000n,
  qkvRowStride: 8192,
  g: 3n,
  beta: 4n,
  state: 5n,
  sequences: 6n,
  sequenceCount: 1,
  keyHeads: 16,
  valueHeads: 32,
};

test('the recurrence launcher refuses value heads that are no multiple of key heads and a short row stride', () => {
  assert.throws(() => deltaNetRecurrence(noDevice, { ...recurrence, keyHeads: 3 }), refusal('valueHeads'));
  assert.throws(() => deltaNetRecurrence(noDevice, { ...recurrence, qkvRowStride: 8191 }), refusal('qkvRowStride'));
  assert.throws(() => deltaNetRecurrence(noDevice, { ...recurrence, sequenceCount: 0 }), refusal('sequenceCount'));
  assert.throws(() => deltaNetRecurrence(noDevice, { ...recurrence, qkvRowStride: 8193 }), refusal('qkvRowStride'));
  assert.throws(() => deltaNetRecurrence(noDevice, { ...recurrence, qkv: 6n }), refusal('qkvRowStride'));
});

/** A left combine of the DeltaNet projection's four segments at `rows` rows (q|k|v split in 4 chunks). */
function left(rows: number, overrides: Partial<LeftCombine> = {}): LeftCombine {
  return {
    rows,
    outFeatures: [8192, 4096, 32, 32],
    outputs: ['bf16', 'bf16', 'bf16', 'bf16'],
    chunks: [4, 8, 16, 16],
    appendParameters: (args) => args,
    ...overrides,
  };
}

test('the DeltaNet combine takes only the projection it is for, at decode', () => {
  const combine = {
    convolved: 1n,
    convWeight: 2n,
    convState: 3n,
    sequences: 4n,
    sequenceCount: 2,
    g: 5n,
    beta: 6n,
    aLog: 7n,
    dtBias: 8n,
  };
  assert.equal(combinesIntoDeltaNet(left(2)), true);
  for (const wrong of [
    left(2, { chunks: [1, 8, 16, 16] }),
    left(2, { outputs: ['bf16', 'f32', 'bf16', 'bf16'] }),
    left(2, { outFeatures: [8192, 4096, 32] }),
    left(2, { outFeatures: [8192, 4096, 32, 16] }),
  ]) {
    assert.equal(combinesIntoDeltaNet(wrong), false);
    assert.throws(() => deltaNetSegmentsCombine(noDevice, { ...combine, combine: wrong }), refusal('combine'));
  }
  // Five rows in two sequences: a prefill call, whose conv would need the rows before each.
  assert.throws(() => deltaNetSegmentsCombine(noDevice, { ...combine, combine: left(5) }), refusal('sequenceCount'));
  assert.throws(
    () => deltaNetSegmentsCombine(noDevice, { ...combine, combine: left(2), convolved: 0n }),
    refusal('convolved'),
  );
});

test('sequence tables are (slot, firstRow, rowCount, startPosition) with rows laid out in table order', () => {
  const { table, firsts, rows } = sequenceTable([
    [4, 5],
    [0, 1],
    [2, 2],
  ]);
  assert.deepEqual([...table], [4, 0, 5, 1000, 0, 5, 1, 1005, 2, 6, 2, 1006]);
  assert.deepEqual(firsts, [0, 5, 6]);
  assert.equal(rows, 8);
  assert.deepEqual([...chunkTable(1, 10, 7)], [1, 0, 7, 1000, 1, 7, 3, 1007]);
});
