// The cuda MoE block (src/backend/cuda/moe-block.ts) against the cpu backend's in bf16 mode, on the same weights:
// FP8 experts (hidden 512, intermediate 512, 8 experts top-2) and bf16 experts (hidden 512, intermediate 256), at 1,
// 7 and 33 rows, with a BlockContext whose linear is the repository's bf16 GEMM. The outputs must agree within a
// few bf16 roundings (relative L2); the same call captured in a CUDA graph after the first must replay the same
// bytes (so nothing in the block reads back or synchronises). Skips, saying why, where there is no CUDA device.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CpuBackend } from '../../src/backend/cpu/backend.ts';
import type { CpuBuffer } from '../../src/backend/cpu/tensors.ts';
import type { BlockContext } from '../../src/backend/cuda/block-context.ts';
import { CudaContext } from '../../src/backend/cuda/context.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import { fusedLinear, fusedLinearCombinedBy } from '../../src/backend/cuda/fused-linear.ts';
import { CapturedGraph } from '../../src/backend/cuda/graph.ts';
import type { Allocation } from '../../src/backend/cuda/memory.ts';
import { runMoe } from '../../src/backend/cuda/moe-block.ts';
import { gemm, gemmWorkspaceBytes } from '../../src/backend/cuda/ops/gemm.ts';
import { DeviceScratch } from '../../src/backend/cuda/scratch.ts';
import type { CudaBuffer } from '../../src/backend/cuda/tensors.ts';
import type { HostElements, MoeWeights, SwiGluWeights, Tensor } from '../../src/backend/types.ts';
import { bf16BitsToFloat32, float32ToBf16Bits, float32ToE4m3Bits } from '../../src/numeric/dtypes.ts';
import { Random } from './support/random.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `no CUDA device: ${availability.reason}`;
/** A few bf16 roundings of the chain (gate/up, h, its e4m3 codes, expert outputs, combine) apart. */
const RELATIVE_BOUND = 1e-2;

type HostTensor = Tensor<HostElements>;

function bf16Tensor(random: Random, shape: number[], scale: number): HostTensor {
  const elements = new Uint16Array(shape[0]! * shape[1]!);
  for (let index = 0; index < elements.length; index++) elements[index] = float32ToBf16Bits(scale * random.normal());
  return { dtype: 'bf16', shape, data: elements };
}

/** e4m3 codes of N(0, 16²) with per-block scales near 1/(16·√in): weights of about N(0, 1/in). */
function fp8Tensor(random: Random, shape: number[]): HostTensor {
  const [rows, columns] = shape as [number, number];
  const elements = new Uint8Array(rows * columns);
  for (let index = 0; index < elements.length; index++) elements[index] = float32ToE4m3Bits(16 * random.normal());
  const scales = new Float32Array(Math.ceil(rows / 128) * Math.ceil(columns / 128));
  for (let index = 0; index < scales.length; index++)
    scales[index] = (0.75 + 0.5 * random.next()) / (16 * Math.sqrt(columns));
  return {
    dtype: 'e4m3',
    shape,
    data: elements,
    scales: { dtype: 'f32', shape: [Math.ceil(rows / 128), Math.ceil(columns / 128)], data: scales },
  };
}

function hostMlp(random: Random, hidden: number, width: number, fp8: boolean): SwiGluWeights<HostElements> {
  const make = (shape: number[]) =>
    fp8 ? fp8Tensor(random, shape) : bf16Tensor(random, shape, 1 / Math.sqrt(shape[1]!));
  return { gate: make([width, hidden]), up: make([width, hidden]), down: make([hidden, width]) };
}

function hostMoe(random: Random, hidden: number, intermediate: number, fp8: boolean): MoeWeights<HostElements> {
  const experts = 8;
  return {
    router: bf16Tensor(random, [experts, hidden], 1 / Math.sqrt(hidden)),
    experts: Array.from({ length: experts }, () => hostMlp(random, hidden, intermediate, fp8)),
    topK: 2,
    shared: hostMlp(random, hidden, 512, false),
    sharedGate: bf16Tensor(random, [1, hidden], 1 / Math.sqrt(hidden)),
  };
}

function mapMoe<A, B>(weights: MoeWeights<A>, map: (tensor: Tensor<A>) => Tensor<B>): MoeWeights<B> {
  const mlp = (m: SwiGluWeights<A>) => ({ gate: map(m.gate), up: map(m.up), down: map(m.down) });
  return {
    router: map(weights.router),
    experts: weights.experts.map(mlp),
    topK: weights.topK,
    shared: mlp(weights.shared),
    sharedGate: map(weights.sharedGate),
  };
}

let cuda: CudaContext;
const held: Allocation[] = [];
before(() => {
  if (!skip) cuda = new CudaContext();
});
after(() => {
  if (skip) return;
  for (const allocation of held) allocation.free();
  cuda.close();
});

function upload(tensor: HostTensor): Tensor<CudaBuffer> {
  const allocation = cuda.upload(tensor.data, 'moe block test');
  held.push(allocation);
  const data = { pointer: allocation.pointer, dtype: tensor.dtype, elements: tensor.data.length };
  return { dtype: tensor.dtype, shape: tensor.shape, data, scales: tensor.scales && upload(tensor.scales) };
}

function blockContext(scratch: DeviceScratch): BlockContext {
  const cache = new WeakMap<object, unknown>();
  return {
    cuda,
    scratch,
    linear(x, weight, out, rows) {
      const [outFeatures, inFeatures] = weight.shape as [number, number];
      const bytes = gemmWorkspaceBytes(rows, outFeatures, inFeatures);
      const workspace = bytes > 0 ? scratch.bytes('test.gemmWorkspace', bytes) : undefined;
      gemm(cuda, { y: out.pointer, x: x.pointer, w: weight.data.pointer, workspace, rows, outFeatures, inFeatures });
    },
    linears(x, segments, rows) {
      fusedLinear(cuda, (bytes) => scratch.bytes('test.gemmWorkspace', bytes), rows, x, segments, rows);
    },
    linearsCombinedBy(x, segments, rows, combine) {
      const workspace = (bytes: number) => scratch.bytes('test.gemmWorkspace', bytes);
      return fusedLinearCombinedBy(cuda, workspace, rows, x, segments, rows, combine);
    },
    prepared<T>(key: object, _label: string, make: () => T): T {
      if (!cache.has(key)) cache.set(key, make());
      return cache.get(key) as T;
    },
    countAllocation: () => {},
    // The test frees its weights itself, at the end.
    releaseWeights: () => {},
  };
}

function relativeError(actual: Float64Array, expected: ArrayLike<number>): number {
  let difference = 0;
  let norm = 0;
  for (let index = 0; index < actual.length; index++) {
    difference += (actual[index]! - expected[index]!) ** 2;
    norm += expected[index]! ** 2;
  }
  return Math.sqrt(difference / norm);
}

function compare(label: string, hidden: number, intermediate: number, fp8: boolean): void {
  const random = new Random(2026);
  const host = hostMoe(random, hidden, intermediate, fp8);
  const cpu = new CpuBackend({ precision: 'bf16' });
  const cpuWeights = mapMoe<HostElements, CpuBuffer>(host, (t) => {
    const tensor = cpu.fromHost(t.dtype, t.shape, t.data);
    return t.scales ? { ...tensor, scales: cpu.fromHost('f32', t.scales.shape, t.scales.data) } : tensor;
  });
  const deviceWeights = mapMoe(host, upload);
  const scratch = new DeviceScratch(cuda);
  const ctx = blockContext(scratch);
  for (const rows of [1, 7, 33]) {
    const xBits = new Uint16Array(rows * hidden);
    for (let index = 0; index < xBits.length; index++) xBits[index] = float32ToBf16Bits(random.normal());
    const xValues = Float32Array.from(xBits, bf16BitsToFloat32);
    const expected = new Float32Array(rows * hidden);
    cpu.moe(cpuWeights, xValues, expected, rows);
    const x = upload({ dtype: 'bf16', shape: [rows, hidden], data: xBits }).data;
    const out = upload({ dtype: 'bf16', shape: [rows, hidden], data: new Uint16Array(rows * hidden) }).data;
    runMoe(ctx, deviceWeights, x, out, rows);
    const direct = cuda.download(out.pointer, new Uint16Array(rows * hidden));
    const error = relativeError(Float64Array.from(direct, bf16BitsToFloat32), expected);
    // The same call captured as a graph and replayed over a cleared output: the same bytes.
    cuda.driver.fillBytes(out.pointer, 0, rows * hidden * 2, cuda.stream);
    const graph = CapturedGraph.capture(cuda.driver, cuda.stream, () => runMoe(ctx, deviceWeights, x, out, rows));
    graph.launch(cuda.stream);
    const replayed = cuda.download(out.pointer, new Uint16Array(rows * hidden));
    graph.destroy();
    console.log(`${label} ${rows} rows: relative error ${error.toExponential(2)} against the cpu`);
    assert.ok(error <= RELATIVE_BOUND, `${label} ${rows} rows: relative error ${error} over ${RELATIVE_BOUND}`);
    assert.deepEqual(replayed, direct, `${label} ${rows} rows: the graph replay differs from the direct call`);
  }
  scratch.release();
}

test('the FP8 MoE block on the device agrees with the cpu and replays as a graph', { skip }, () => {
  compare('fp8 experts', 512, 512, true);
});

test('the bf16 MoE block on the device agrees with the cpu and replays as a graph', { skip }, () => {
  compare('bf16 experts', 512, 256, false);
});
