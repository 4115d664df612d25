// The device-side synthetic weight fills (kernels/cuda/synth_init.cu) against their CPU reference
// (src/synth/device-init.ts), element for element, with odd counts, an offset start and the e4m3 kernel's byte tail,
// and each launch's parameter sizes against the kernel's. Skips without CUDA.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CudaContext } from '../../src/backend/cuda/context.ts';
import { cudaAvailability } from '../../src/backend/cuda/driver.ts';
import type { Allocation } from '../../src/backend/cuda/memory.ts';
import { observeLaunches } from '../../src/backend/cuda/ops/launch.ts';
import { synthFillBf16, synthFillBlockScales, synthFillE4m3 } from '../../src/backend/cuda/ops/synthInit.ts';
import type { TensorSpec } from '../../src/model/weights.ts';
import { deviceFill, referenceBf16, referenceBlockScale, referenceE4m3 } from '../../src/synth/device-init.ts';
import { uniformCodeTable } from '../../src/synth/init.ts';

const availability = cudaAvailability();
const skip = availability.available ? false : `no CUDA device: ${availability.reason}`;
const SEED = 20261201;

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

function allocate(bytes: number): Allocation {
  const allocation = cuda.allocate(bytes, 'synth init test');
  cuda.driver.fillBytes(allocation.pointer, 0xa5, bytes, cuda.stream);
  held.push(allocation);
  return allocation;
}

function spec(name: string, dtype: TensorSpec['dtype'], shape: number[], role: TensorSpec['role']): TensorSpec {
  return { name, role, part: 'backbone', dtype, accepts: [dtype], shape, writesResidual: true };
}

/** Runs `work`, checking every launch's argument sizes against the kernel's parameter layout. */
function checkedLaunches(work: () => void): number {
  let launches = 0;
  const previous = observeLaunches((kernel, handle, args) => {
    const sizes = cuda.driver.parameterLayout(handle).map((parameter) => parameter.size);
    assert.deepEqual(args.sizes, sizes, `${kernel.name} parameter sizes`);
    launches += 1;
  });
  try {
    work();
  } finally {
    observeLaunches(previous);
  }
  cuda.synchronize();
  return launches;
}

test('synth_fill_bf16 writes the reference bits, from an offset start', { skip }, () => {
  const fill = deviceFill(spec('model.layers.3.mlp.gate.weight', 'BF16', [300, 701], 'linear'), SEED, 0.2);
  assert.equal(fill.kind, 'bf16');
  if (fill.kind !== 'bf16') return;
  const count = 210_011;
  const first = 77;
  const out = allocate(count * 2 + 2);
  checkedLaunches(() => synthFillBf16(cuda, { out: out.pointer, first, count, fill }));
  const got = cuda.download(out.pointer, new Uint16Array(count + 1));
  for (let i = 0; i < count; i++) assert.equal(got[i], referenceBf16(fill, first + i), `element ${i}`);
  assert.equal(got[count], 0xa5a5, 'nothing past the end is written');
});

test('synth_fill_e4m3 writes the reference bytes, whole chunks and the tail', { skip }, () => {
  const weight = spec('model.layers.0.mlp.experts.7.up_proj.weight', 'F8_E4M3', [512, 2048], 'expert');
  const fill = deviceFill(weight, SEED, 0.1);
  assert.equal(fill.kind, 'e4m3');
  if (fill.kind !== 'e4m3') return;
  const table = cuda.upload(uniformCodeTable(), 'code table');
  held.push(table);
  for (const count of [512 * 2048, 16 * 1001 + 7, 5]) {
    const out = allocate(count + 16);
    checkedLaunches(() => synthFillE4m3(cuda, { out: out.pointer, count, stream: fill.weight, table: table.pointer }));
    const got = cuda.download(out.pointer, new Uint8Array(count + 1));
    const codes = uniformCodeTable();
    for (let i = 0; i < count; i++) assert.equal(got[i], referenceE4m3(fill.weight, i, codes), `${count}: byte ${i}`);
    assert.equal(got[count], 0xa5, `${count}: nothing past the end is written`);
  }
});

test('synth_fill_block_scales writes the reference fp32 scales', { skip }, () => {
  const weight = spec('model.layers.0.mlp.experts.7.down_proj.weight', 'F8_E4M3', [2048, 512], 'expert');
  const fill = deviceFill(weight, SEED, 0.1);
  if (fill.kind !== 'e4m3') throw new Error('expected an e4m3 fill');
  const count = 16 * 4 + 3;
  const out = allocate(count * 4);
  checkedLaunches(() => synthFillBlockScales(cuda, { out: out.pointer, count, fill: fill.scales }));
  const got = cuda.download(out.pointer, new Float32Array(count));
  for (let i = 0; i < count; i++) assert.equal(got[i], referenceBlockScale(fill.scales, i), `scale ${i}`);
});
