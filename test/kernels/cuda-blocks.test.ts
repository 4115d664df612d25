// The cuda attention and Gated DeltaNet blocks against the cpu backend's bf16 mode on the same random weights and
// inputs: a prefill of two sequences (73 rows: attention folds on chip) then a decode step of both lanes (2 rows: the
// splits are spread and combined), for the backbone's gated NeoX attention (head dim 256), a tower-style plain
// interleaved attention (head dim 128) and Gated DeltaNet (bf16 A_log/dt_bias). Outputs and the carried state (K/V
// slabs, conv and recurrent slabs) must agree within a few bf16 roundings (relative L2). The projections run through
// the batch-invariant GEMM. Skips, saying why, where there is no CUDA device.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CpuBackend } from '../../src/backend/cpu/backend.ts';
import type { CpuBuffer } from '../../src/backend/cpu/tensors.ts';
import { runAttention } from '../../src/backend/cuda/attention-block.ts';
import type { BlockContext } from '../../src/backend/cuda/block-context.ts';
import { CudaContext } from '../../src/backend/cuda/context.ts';
import { runDeltaNet } from '../../src/backend/cuda/delta-net-block.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import { fusedLinear, fusedLinearCombinedBy } from '../../src/backend/cuda/fused-linear.ts';
import type { Allocation } from '../../src/backend/cuda/memory.ts';
import { gemm, gemmWorkspaceBytes } from '../../src/backend/cuda/ops/gemm.ts';
import { DeviceScratch } from '../../src/backend/cuda/scratch.ts';
import { type CudaBuffer, elementBytes } from '../../src/backend/cuda/tensors.ts';
import type { CallTables, DType, HostElements, Tensor } from '../../src/backend/types.ts';
import { bf16BitsToFloat32 } from '../../src/numeric/dtypes.ts';
import { freshSeed, Random, randomBf16 } from './support/random.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `no CUDA device: ${availability.reason}`;
/** A few bf16 roundings (2⁻⁸ each) that differ between fp32 kernels and the cpu's fp64 arithmetic. */
const BOUND = 1e-2;
const HIDDEN = 256;
const SLOTS = 4;
const CAPACITY = 128;

let cuda: CudaContext;
const allocations: Allocation[] = [];
before(() => {
  if (!skip) cuda = new CudaContext();
});
after(() => {
  if (skip) return;
  for (const allocation of allocations) allocation.free();
  cuda.close();
});

/** Makes a tensor of one backend from host elements (zeros when none). */
type Maker<B> = (dtype: DType, shape: readonly number[], host?: HostElements) => Tensor<B>;

const cpu = new CpuBackend({ precision: 'bf16' });
const cpuMaker: Maker<CpuBuffer> = (dtype, shape, host) =>
  host === undefined ? cpu.allocate(dtype, shape) : cpu.fromHost(dtype, shape, host);
const cudaMaker: Maker<CudaBuffer> = (dtype, shape, host) => {
  const elements = shape.reduce((a, b) => a * b, 1);
  const bytes = Math.max(elements * elementBytes(dtype), 4);
  const allocation = host === undefined ? cuda.allocate(bytes, 'test tensor') : cuda.upload(host, 'test tensor');
  if (host === undefined) cuda.driver.fillBytes(allocation.pointer, 0, bytes, cuda.stream);
  allocations.push(allocation);
  return { dtype, shape, data: { pointer: allocation.pointer, dtype, elements } };
};

function blockContext(): BlockContext {
  const scratch = new DeviceScratch(cuda);
  return {
    cuda,
    scratch,
    linear(x, weight, out, rows) {
      const [outFeatures, inFeatures] = weight.shape as [number, number];
      const workspace = scratch.bytes('test.gemm', gemmWorkspaceBytes(rows, outFeatures, inFeatures));
      gemm(cuda, { y: out.pointer, x: x.pointer, w: weight.data.pointer, workspace, rows, outFeatures, inFeatures });
    },
    linears(x, segments, rows) {
      fusedLinear(cuda, (bytes) => scratch.bytes('test.gemm', bytes), rows, x, segments, rows);
    },
    linearsCombinedBy(x, segments, rows, combine) {
      return fusedLinearCombinedBy(
        cuda,
        (bytes) => scratch.bytes('test.gemm', bytes),
        rows,
        x,
        segments,
        rows,
        combine,
      );
    },
    prepared: (_key, _label, make) => make(),
    countAllocation: () => {},
    // The test frees its weights itself, at the end.
    releaseWeights: () => {},
  };
}

/** Host bf16 words of `count` normal values (scale, offset), drawn once so both backends get the same bits. */
type Draw = (count: number, scale: number, offset?: number) => Uint16Array;

function drawer(seed: number): Draw {
  const random = new Random(seed);
  return (count, scale, offset = 0) => randomBf16(random, count, scale, offset).bits;
}

interface Call {
  readonly rows: number;
  readonly rowTable: Int32Array;
  readonly sequences: Int32Array;
  readonly sequenceCount: number;
}

/** (slot, first position, rows) per sequence → the call's row and sequence tables. */
function call(sequences: readonly (readonly [number, number, number])[]): Call {
  const rowEntries: number[] = [];
  const sequenceEntries: number[] = [];
  for (const [slot, start, count] of sequences) {
    sequenceEntries.push(slot, rowEntries.length / 2, count, start);
    for (let i = 0; i < count; i++) rowEntries.push(slot, start + i);
  }
  return {
    rows: rowEntries.length / 2,
    rowTable: Int32Array.from(rowEntries),
    sequences: Int32Array.from(sequenceEntries),
    sequenceCount: sequences.length,
  };
}

const CALLS = [
  call([
    [1, 0, 70],
    [3, 0, 3],
  ]),
  call([
    [1, 70, 1],
    [3, 3, 1],
  ]),
];

function tables<B>(make: Maker<B>, c: Call): CallTables<B> {
  return {
    rows: make('i32', [c.rows, 2], c.rowTable).data,
    sequences: make('i32', [c.sequenceCount, 4], c.sequences).data,
    sequenceCount: c.sequenceCount,
  };
}

function relativeError(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  let difference = 0;
  let reference = 0;
  for (let i = 0; i < expected.length; i++) {
    const d = actual[i]! - expected[i]!;
    difference += d * d;
    reference += expected[i]! * expected[i]!;
  }
  return Math.sqrt(difference / reference);
}

function deviceValues(tensor: Tensor<CudaBuffer>): Float64Array {
  const { elements, dtype, pointer } = tensor.data;
  if (dtype === 'f32') return Float64Array.from(cuda.download(pointer, new Float32Array(elements)));
  const words = cuda.download(pointer, new Uint16Array(elements));
  return Float64Array.from(words, (word) => bf16BitsToFloat32(word));
}

function deviceBuffer(buffer: CudaBuffer): Float64Array {
  return deviceValues({ dtype: buffer.dtype, shape: [buffer.elements], data: buffer });
}

function agree(label: string, actual: Float64Array, expected: ArrayLike<number>): void {
  assert.ok(
    actual.every((value) => Number.isFinite(value)),
    `${label}: a non-finite value`,
  );
  const error = relativeError(actual, expected);
  console.log(`${label}: relative L2 error ${error.toExponential(2)}`);
  assert.ok(error <= BOUND, `${label}: relative L2 error ${error} over ${BOUND}`);
}

interface AttentionForm {
  readonly label: string;
  readonly headDim: number;
  readonly outputGate: boolean;
  readonly ropeStyle: 'neox' | 'interleaved';
}

function attentionWeights<B>(make: Maker<B>, form: AttentionForm, draw: Draw) {
  const heads = 4;
  const keyValueHeads = 2;
  const { headDim } = form;
  const queryRows = heads * headDim * (form.outputGate ? 2 : 1);
  const linear = (rows: number, cols: number) => make('bf16', [rows, cols], draw(rows * cols, 1 / Math.sqrt(cols)));
  return {
    heads,
    keyValueHeads,
    headDim,
    rotaryDim: 64,
    ropeTheta: 1e7,
    ropeStyle: form.ropeStyle,
    outputGate: form.outputGate,
    eps: 1e-6,
    qProj: linear(queryRows, HIDDEN),
    kProj: linear(keyValueHeads * headDim, HIDDEN),
    vProj: linear(keyValueHeads * headDim, HIDDEN),
    oProj: linear(HIDDEN, heads * headDim),
    qNorm: make('bf16', [headDim], draw(headDim, 0.02)),
    kNorm: make('bf16', [headDim], draw(headDim, 0.02)),
  };
}

const FORMS: readonly AttentionForm[] = [
  { label: 'backbone attention (gated, NeoX, head dim 256)', headDim: 256, outputGate: true, ropeStyle: 'neox' },
  {
    label: 'tower attention (plain, interleaved, head dim 128)',
    headDim: 128,
    outputGate: false,
    ropeStyle: 'interleaved',
  },
];

for (const form of FORMS) {
  test(`${form.label} matches the cpu bf16 mode`, { skip }, () => {
    const seed = freshSeed();
    console.log(`${form.label}: seed ${seed}`);
    const cpuWeights = attentionWeights(cpuMaker, form, drawer(seed));
    const cudaWeights = attentionWeights(cudaMaker, form, drawer(seed));
    const slabShape = [SLOTS, CAPACITY, 2, form.headDim];
    const cpuSlab = { keys: cpuMaker('bf16', slabShape), values: cpuMaker('bf16', slabShape) };
    const cudaSlab = { keys: cudaMaker('bf16', slabShape), values: cudaMaker('bf16', slabShape) };
    const ctx = blockContext();
    const inputs = drawer(seed + 1);
    for (const [index, c] of CALLS.entries()) {
      const x = inputs(c.rows * HIDDEN, 1);
      const cpuX = Float32Array.from(x, (word) => bf16BitsToFloat32(word));
      const cpuOut = new Float32Array(c.rows * HIDDEN);
      cpu.attention(cpuWeights, cpuX, cpuSlab, tables(cpuMaker, c), cpuOut, c.rows);
      const cudaOut = cudaMaker('bf16', [c.rows, HIDDEN]);
      const cudaX = cudaMaker('bf16', [c.rows, HIDDEN], x);
      runAttention(ctx, cudaWeights, cudaX.data, cudaSlab, tables(cudaMaker, c), cudaOut.data, c.rows);
      cuda.synchronize();
      agree(`${form.label}, call ${index} (${c.rows} rows) output`, deviceBuffer(cudaOut.data), cpuOut);
    }
    // Only the rows the calls wrote are compared (the rest stay zero on both).
    for (const name of ['keys', 'values'] as const) {
      agree(`${form.label} ${name} slab`, deviceValues(cudaSlab[name]), cpuSlab[name].data as Float32Array);
    }
    ctx.scratch.release();
  });
}

function deltaNetWeights<B>(make: Maker<B>, draw: Draw) {
  const keyHeads = 2;
  const valueHeads = 4;
  const dim = 128;
  const channels = 2 * keyHeads * dim + valueHeads * dim;
  const linear = (rows: number, cols: number) => make('bf16', [rows, cols], draw(rows * cols, 1 / Math.sqrt(cols)));
  const decayLog = Uint16Array.from(draw(valueHeads, 0.5, 1.5));
  return {
    inProjQkv: linear(channels, HIDDEN),
    inProjZ: linear(valueHeads * dim, HIDDEN),
    inProjB: linear(valueHeads, HIDDEN),
    inProjA: linear(valueHeads, HIDDEN),
    outProj: linear(HIDDEN, valueHeads * dim),
    conv: make('bf16', [channels, 1, 4], draw(channels * 4, 0.5)),
    aLog: make('bf16', [valueHeads], decayLog),
    dtBias: make('bf16', [valueHeads], draw(valueHeads, 0.1)),
    norm: make('bf16', [dim], draw(dim, 0.02, 1)),
    keyHeads,
    valueHeads,
    keyDim: dim,
    valueDim: dim,
    convKernel: 4,
    eps: 1e-6,
  };
}

test('Gated DeltaNet matches the cpu bf16 mode (recurrent form)', { skip }, () => {
  const seed = freshSeed();
  console.log(`Gated DeltaNet: seed ${seed}`);
  const cpuWeights = deltaNetWeights(cpuMaker, drawer(seed));
  const cudaWeights = deltaNetWeights(cudaMaker, drawer(seed));
  const channels = 2 * 2 * 128 + 4 * 128;
  const slab = <B>(make: Maker<B>) => ({
    conv: make('bf16', [SLOTS, 3, channels]),
    recurrent: make('f32', [SLOTS, 4, 128, 128]),
  });
  const cpuSlab = slab(cpuMaker);
  const cudaSlab = slab(cudaMaker);
  const ctx = blockContext();
  const inputs = drawer(seed + 1);
  for (const [index, c] of CALLS.entries()) {
    const x = inputs(c.rows * HIDDEN, 1);
    const cpuX = Float32Array.from(x, (word) => bf16BitsToFloat32(word));
    const cpuOut = new Float32Array(c.rows * HIDDEN);
    cpu.deltaNet(cpuWeights, cpuX, cpuSlab, tables(cpuMaker, c), cpuOut, c.rows);
    const cudaOut = cudaMaker('bf16', [c.rows, HIDDEN]);
    const cudaX = cudaMaker('bf16', [c.rows, HIDDEN], x);
    runDeltaNet(ctx, cudaWeights, cudaX.data, cudaSlab, tables(cudaMaker, c), cudaOut.data, c.rows);
    cuda.synchronize();
    agree(`Gated DeltaNet, call ${index} (${c.rows} rows) output`, deviceBuffer(cudaOut.data), cpuOut);
  }
  agree('Gated DeltaNet conv slab', deviceValues(cudaSlab.conv), cpuSlab.conv.data as Float32Array);
  agree('Gated DeltaNet recurrent slab', deviceValues(cudaSlab.recurrent), cpuSlab.recurrent.data as Float32Array);
  ctx.scratch.release();
});
