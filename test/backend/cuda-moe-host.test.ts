// What the cuda MoE and SwiGLU blocks decide on the host, without a GPU: the geometry refusals, the device re-layout's
// byte map against the moeWeights.ts packers, the packed buffers' sizes, and the launches a call queues on a recording
// stand-in for the device (their order and grids; packing once per weights object; a step after plan allocating and
// synchronising nothing).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import koffi from 'koffi';
import type { BlockContext } from '../../src/backend/cuda/block-context.ts';
import type { CudaContext } from '../../src/backend/cuda/context.ts';
import { runMoe } from '../../src/backend/cuda/moe-block.ts';
import { packedExpertBytes } from '../../src/backend/cuda/moe-experts.ts';
import { moeGeometry } from '../../src/backend/cuda/moe-geometry.ts';
import { packDownBf16, packDownFp8, packGateUpBf16, packGateUpFp8 } from '../../src/backend/cuda/moeWeights.ts';
import { moeMaxTiles } from '../../src/backend/cuda/ops/moe.ts';
import { packedWordSource } from '../../src/backend/cuda/ops/moePack.ts';
import { DeviceScratch } from '../../src/backend/cuda/scratch.ts';
import { runSwiGlu } from '../../src/backend/cuda/swiglu-block.ts';
import { type CudaBuffer, type CudaTensor, shapeElements } from '../../src/backend/cuda/tensors.ts';
import type { DType, MoeWeights, SwiGluWeights } from '../../src/backend/types.ts';
import { Random } from '../kernels/support/random.ts';

function randomBytes(random: Random, count: number): Uint8Array {
  const bytes = new Uint8Array(count);
  for (let index = 0; index < count; index++) bytes[index] = random.integer(256);
  return bytes;
}

/** The packed bytes as the device re-layout writes them (moe_pack.cu's map, written out by packedWordSource). */
function packByMap(first: Uint8Array, second: Uint8Array, rowBytes: number, groups: number, interleaved: boolean) {
  const target = new Uint8Array(groups * 16 * rowBytes);
  for (let byte = 0; byte < target.length; byte++) {
    const from = packedWordSource(byte, rowBytes, interleaved);
    target[byte] = (from.source === 0 ? first : second)[from.row * rowBytes + from.byte]!;
  }
  return target;
}

test('the device re-layout puts every byte where the FP8 and bf16 packers do', () => {
  const random = new Random(31);
  const hidden = 256;
  const intermediate = 128;
  const gate = randomBytes(random, intermediate * hidden * 2);
  const up = randomBytes(random, intermediate * hidden * 2);
  const down = randomBytes(random, hidden * intermediate * 2);
  const fp8 = { gate: gate.subarray(0, intermediate * hidden), up: up.subarray(0, intermediate * hidden) };
  const fp8GateUp = new Uint8Array(2 * intermediate * hidden);
  packGateUpFp8(fp8.gate, fp8.up, hidden, intermediate, fp8GateUp, 0);
  assert.deepEqual(packByMap(fp8.gate, fp8.up, hidden, (2 * intermediate) / 16, true), fp8GateUp);
  const fp8Down = new Uint8Array(hidden * intermediate);
  packDownFp8(down.subarray(0, hidden * intermediate), hidden, intermediate, fp8Down, 0);
  assert.deepEqual(packByMap(down, down, intermediate, hidden / 16, false), fp8Down);
  const words = (bytes: Uint8Array) => new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2);
  const bf16GateUp = new Uint16Array(2 * intermediate * hidden);
  packGateUpBf16(words(gate), words(up), hidden, intermediate, bf16GateUp, 0);
  const mappedGateUp = packByMap(gate, up, 2 * hidden, (2 * intermediate) / 16, true);
  assert.deepEqual(words(mappedGateUp), bf16GateUp);
  const bf16Down = new Uint16Array(hidden * intermediate);
  packDownBf16(words(down), hidden, intermediate, bf16Down, 0);
  assert.deepEqual(words(packByMap(down, down, 2 * intermediate, hidden / 16, false)), bf16Down);
});

let nextPointer = 0x10_0000_0000n;
function buffer(dtype: DType, elements: number): CudaBuffer {
  const pointer = nextPointer;
  nextPointer += BigInt(Math.ceil((elements * 4) / 256) * 256 + 256);
  return { pointer, dtype, elements };
}

function tensor(dtype: DType, shape: number[], withScales = dtype === 'e4m3'): CudaTensor {
  const scales = withScales ? tensor('f32', [Math.ceil(shape[0]! / 128), Math.ceil(shape[1]! / 128)]) : undefined;
  return { dtype, shape, data: buffer(dtype, shapeElements(shape)), scales };
}

function mlp(dtype: DType, hidden: number, width: number): SwiGluWeights<CudaBuffer> {
  return {
    gate: tensor(dtype, [width, hidden]),
    up: tensor(dtype, [width, hidden]),
    down: tensor(dtype, [hidden, width]),
  };
}

interface Options {
  readonly experts?: number;
  readonly topK?: number;
  readonly hidden?: number;
  readonly intermediate?: number;
  readonly dtype?: DType;
}

function moeWeights(o: Options = {}): MoeWeights<CudaBuffer> {
  const { experts = 256, topK = 8, hidden = 2048, intermediate = 512, dtype = 'e4m3' } = o;
  return {
    router: tensor('bf16', [experts, hidden]),
    experts: Array.from({ length: experts }, () => mlp(dtype, hidden, intermediate)),
    topK,
    shared: mlp('bf16', hidden, 512),
    sharedGate: tensor('bf16', [1, hidden]),
  };
}

function refuses(weights: MoeWeights<CudaBuffer>, pattern: RegExp): void {
  assert.throws(
    () => moeGeometry(weights),
    (error: Error & { code?: string }) => error.code === 'MOE_GEOMETRY_UNSUPPORTED' && pattern.test(error.message),
  );
}

test('the MoE geometry the kernels cannot serve is refused by name', () => {
  assert.deepEqual(moeGeometry(moeWeights()), {
    experts: 256,
    topK: 8,
    hidden: 2048,
    intermediate: 512,
    format: 'fp8',
  });
  assert.equal(moeGeometry(moeWeights({ dtype: 'bf16', hidden: 768, intermediate: 256, experts: 8 })).format, 'bf16');
  refuses(moeWeights({ experts: 257 }), /257 experts/);
  refuses(moeWeights({ topK: 17 }), /top-17/);
  refuses(moeWeights({ experts: 4, topK: 5 }), /top-5/);
  refuses(moeWeights({ experts: 8, hidden: 640 }), /hidden a multiple of 512/);
  refuses(moeWeights({ experts: 8, intermediate: 256 }), /intermediate a multiple of 512/);
  refuses(moeWeights({ experts: 8, hidden: 4096 }), /up to 2048/);
  refuses(moeWeights({ experts: 8, dtype: 'bf16', hidden: 320 }), /multiple of 256/);
  refuses(moeWeights({ experts: 8, dtype: 'f16' }), /f16/);
  const mixed = moeWeights({ experts: 8 });
  (mixed.experts as SwiGluWeights<CudaBuffer>[])[5] = mlp('bf16', 2048, 512);
  refuses(mixed, /expert 5 gate is bf16/);
  const unscaled = moeWeights({ experts: 8 });
  (unscaled.experts as SwiGluWeights<CudaBuffer>[])[2] = {
    ...unscaled.experts[2]!,
    up: tensor('e4m3', [512, 2048], false),
  };
  refuses(unscaled, /expert 2 up is e4m3 without its block scales/);
  const narrow = moeWeights({ experts: 8 });
  (narrow.experts as SwiGluWeights<CudaBuffer>[])[7] = { ...narrow.experts[7]!, down: tensor('e4m3', [2048, 1024]) };
  refuses(narrow, /expert 7 down is \[2048,1024\]/);
  refuses({ ...moeWeights({ experts: 8 }), router: tensor('bf16', [9, 2048]) }, /9 rows but there are 8 experts/);
  refuses({ ...moeWeights({ experts: 8 }), shared: mlp('bf16', 1024, 512) }, /shared expert gate_proj is \[512,1024\]/);
  refuses({ ...moeWeights({ experts: 8 }), sharedGate: tensor('bf16', [2, 2048]) }, /shared expert gate/);
});

test('the packed experts at the full geometry: 768 MiB of FP8 per layer (1.5 GiB bf16)', () => {
  const fp8 = packedExpertBytes(moeGeometry(moeWeights()));
  assert.deepEqual(fp8, { gateUp: 512 * 2 ** 20, down: 256 * 2 ** 20, gateUpScales: 131072, downScales: 65536 });
  const bf16 = packedExpertBytes(moeGeometry(moeWeights({ dtype: 'bf16' })));
  assert.deepEqual(bf16, { gateUp: 1024 * 2 ** 20, down: 512 * 2 ** 20 });
});

interface Recorded {
  readonly calls: string[];
  /** Every launch's grid, by kernel name, in launch order. */
  readonly grids: Map<string, (readonly number[])[]>;
  readonly copies: { to: bigint; from: bigint; bytes: number }[];
  allocations: number;
  frees: number;
  synchronizations: number;
  packs: number;
  /** Every host table uploaded, with the device pointer it got. */
  readonly uploads: { pointer: bigint; values: BigInt64Array }[];
  /** Each launch's argument address table, by kernel name. */
  readonly parameters: Map<string, BigUint64Array[]>;
  /** Pointers of the weights given back after packing, in order. */
  readonly released: bigint[];
}

/** A BlockContext over a stand-in device that records launches, copies, allocations and synchronisations. */
function recordingContext(failAllocation = -1): { ctx: BlockContext; log: Recorded } {
  const log: Recorded = {
    calls: [],
    grids: new Map(),
    copies: [],
    allocations: 0,
    frees: 0,
    synchronizations: 0,
    packs: 0,
    uploads: [],
    parameters: new Map(),
    released: [],
  };
  let made = 0;
  const driver = {
    launch(_kernel: unknown, shape: { grid: readonly number[] }, _stream: unknown, p: BigUint64Array, name: string) {
      if (name === 'moe_pack_rows') log.packs++;
      else if (name !== 'moe_gather_words') log.calls.push(name);
      log.grids.set(name, [...(log.grids.get(name) ?? []), shape.grid]);
      log.parameters.set(name, [...(log.parameters.get(name) ?? []), p]);
    },
    launchEx(
      kernel: unknown,
      shape: { grid: readonly number[] },
      stream: unknown,
      p: BigUint64Array,
      _a: unknown,
      name: string,
    ) {
      this.launch(kernel, shape, stream, p, name);
    },
    copyDeviceToDevice(to: bigint, from: bigint, bytes: number) {
      log.copies.push({ to, from, bytes });
    },
    fillBytes() {},
  };
  const cuda = {
    driver,
    stream: 0n,
    kernels: { kernel: (family: string, name: string) => `${family}/${name}` },
    allocate(bytes: number, label: string) {
      if (made++ === failAllocation) throw new Error(`allocation ${label} refused`);
      log.allocations++;
      return {
        kind: 'device',
        pointer: buffer('i32', Math.ceil(bytes / 4)).pointer,
        bytes,
        label,
        free: () => log.frees++,
      };
    },
    upload(values: BigInt64Array, label: string) {
      const allocation = cuda.allocate(values.byteLength, label);
      log.uploads.push({ pointer: allocation.pointer, values: values.slice() });
      return allocation;
    },
    synchronize: () => log.synchronizations++,
    // The side part's calls are marked, then the main part's follow: the order one stream would see.
    alongside(side: () => void, main: () => void) {
      const first = log.calls.length;
      side();
      for (let index = first; index < log.calls.length; index++) log.calls[index] = `side: ${log.calls[index]}`;
      main();
    },
  } as unknown as CudaContext;
  const cache = new WeakMap<object, unknown>();
  const ctx: BlockContext = {
    cuda,
    scratch: new DeviceScratch(cuda),
    linear(_x, weight, out, rows) {
      assert.ok(out.elements >= rows * weight.shape[0]!, 'a linear output too small for its rows');
      log.calls.push(`linear [${weight.shape}]`);
    },
    linears(_x, segments, rows) {
      for (const { weight, out } of segments) assert.ok(out.elements >= rows * weight.shape[0]!, 'an output too small');
      log.calls.push(`linears ${segments.map(({ weight }) => `[${weight.shape}]`).join(' + ')}`);
    },
    // The projections only (as where K does not split): the SwiGLU kernel runs after them.
    linearsCombinedBy(x, segments, rows) {
      ctx.linears(x, segments, rows);
      return false;
    },
    prepared<T>(key: object, _label: string, make: () => T): T {
      if (!cache.has(key)) cache.set(key, make());
      return cache.get(key) as T;
    },
    countAllocation: () => {},
    releaseWeights: (tensors) => {
      log.released.push(...tensors.map((tensor) => tensor.data.pointer));
    },
  };
  return { ctx, log };
}

/** One launch projects x for the shared expert's gate and up, the router and the shared expert's gate logit. */
/** The shared expert: its gate|up (with the router and its gate), SwiGLU, then its down projection on the side stream. */
const SHARED_CALLS = [
  'linears [512,2048] + [512,2048] + [256,2048] + [1,2048]',
  'swiglu_bf16',
  'side: linear [2048,512]',
];

/** Argument `index` of each launch of `name`, as a device pointer. */
function pointerArguments(log: Recorded, name: string, index: number): bigint[] {
  return (log.parameters.get(name) ?? []).map((p) => BigInt(koffi.decode(p[index]!, 'uint64_t')));
}

test('an FP8 MoE call queues shared expert, router with quantiser and grouping, GEMMs and combine; packs once', () => {
  const { ctx, log } = recordingContext();
  const weights = moeWeights();
  const rows = 7;
  runMoe(ctx, weights, buffer('bf16', rows * 2048), buffer('bf16', rows * 2048), rows);
  // Every expert in one launch each for gate|up and down, and one gather each for their block scales; no copies.
  assert.equal(log.packs, 2);
  // 256 threads a 16-byte chunk: 2 MiB of gate|up and 1 MiB of down an expert.
  assert.deepEqual(log.grids.get('moe_pack_rows'), [
    [512, 256, 1],
    [256, 256, 1],
  ]);
  assert.deepEqual(log.grids.get('moe_gather_words'), [
    [1, 512, 1],
    [1, 256, 1],
  ]);
  assert.equal(log.copies.length, 0);
  // Once packed, every expert's gate, up and down are given back (the packed copy replaces them).
  const perExpert = weights.experts.flatMap((expert) => [expert.gate, expert.up, expert.down]);
  assert.deepEqual(
    log.released,
    perExpert.map((tensor) => tensor.data.pointer),
  );
  // One table: gate and up rows of each expert, down rows (twice: the kernel's second source), then the scales as
  // shipped, gate then up of each expert, and down's; each launch reads its part.
  assert.equal(log.uploads.length, 1);
  const { pointer: table, values } = log.uploads[0]!;
  const e = weights.experts;
  const expected = [
    ...e.flatMap((x) => [x.gate.data.pointer, x.up.data.pointer]),
    ...e.flatMap((x) => [x.down.data.pointer, x.down.data.pointer]),
    ...e.flatMap((x) => [x.gate.scales!.data.pointer, x.up.scales!.data.pointer]),
    ...e.map((x) => x.down.scales!.data.pointer),
  ];
  assert.deepEqual([...values], expected);
  assert.deepEqual(pointerArguments(log, 'moe_pack_rows', 3), [table, table + 8n * 512n]);
  assert.deepEqual(pointerArguments(log, 'moe_gather_words', 2), [table + 8n * 1024n, table + 8n * 1536n]);
  // The packed places: gate|up experts 2 · 512 · 2048 bytes apart, down 2048 · 512; scales laid end to end.
  assert.deepEqual(
    (log.parameters.get('moe_pack_rows') ?? []).map((p) => BigInt(koffi.decode(p[1]!, 'int64_t'))),
    [2n * 512n * 2048n, 2048n * 512n],
  );
  assert.deepEqual(
    (log.parameters.get('moe_gather_words') ?? []).map((p) => koffi.decode(p[3]!, 'int32_t')),
    [64, 64],
  );
  // The table is freed once the launches that read it are done.
  assert.ok(log.synchronizations >= 1);
  assert.deepEqual(log.calls, [
    ...SHARED_CALLS,
    'router_top_k_quantize',
    'moe_gate_up_fp8',
    'moe_down_fp8',
    'moe_combine',
  ]);
  assert.deepEqual(log.grids.get('moe_gate_up_fp8'), [[moeMaxTiles(rows * 8, 256), 64, 1]]);
  // One block per tile and 8 of the 128 sixteen-row weight groups, in one dimension.
  assert.deepEqual(log.grids.get('moe_down_fp8'), [[moeMaxTiles(rows * 8, 256) * 16, 1, 1]]);
  assert.deepEqual(log.grids.get('moe_combine'), [[rows, 1, 1]]);
  // x [rows, 2048] for gate|up quantised and the choices grouped by the router's launch, one block a row; h quantised
  // inside the down GEMM.
  assert.deepEqual(log.grids.get('router_top_k_quantize'), [[rows, 1, 1]]);
  // The step after plan: the same call again makes nothing, packs nothing and never waits on the device.
  const before = { allocations: log.allocations, synchronizations: log.synchronizations, packs: log.packs };
  runMoe(ctx, weights, buffer('bf16', rows * 2048), buffer('bf16', rows * 2048), rows);
  assert.deepEqual({ allocations: log.allocations, synchronizations: log.synchronizations, packs: log.packs }, before);
  assert.equal(log.released.length, perExpert.length, 'a later call gives nothing back again');
  // Both router launches group, counting arrivals in the one scratch counter (zeroed when allocated, left at zero).
  const arrivals = log.parameters.get('router_top_k_quantize')!.map((p) => koffi.decode(p[8]!, 'uint64_t'));
  assert.equal(arrivals.length, 2);
  assert.notEqual(arrivals[0], 0);
  assert.equal(arrivals[1], arrivals[0]);
});

test('a one-row FP8 MoE call routes in the gate|up launch, and its down GEMM reads the ids that launch writes', () => {
  const { ctx, log } = recordingContext();
  const x = buffer('bf16', 2048);
  runMoe(ctx, moeWeights(), x, buffer('bf16', 2048), 1);
  assert.deepEqual(log.calls, [...SHARED_CALLS, 'moe_gate_up_fp8_routed', 'moe_down_fp8_routed', 'moe_combine']);
  // A block a choice and a 16-row weight group; down a block a choice and 8 of its 128 weight groups.
  assert.deepEqual(log.grids.get('moe_gate_up_fp8_routed'), [[8, 64, 1]]);
  assert.deepEqual(log.grids.get('moe_down_fp8_routed'), [[8 * 16, 1, 1]]);
  const routed = (index: number) => pointerArguments(log, 'moe_gate_up_fp8_routed', index)[0];
  const down = (index: number) => pointerArguments(log, 'moe_down_fp8_routed', index)[0];
  const combine = (index: number) => pointerArguments(log, 'moe_combine', index)[0];
  assert.equal(routed(8), x.pointer, 'the routed launch quantises the MoE input itself');
  // h and the ids as the down GEMM reads them; its output, the ids and the weights as the combine reads them.
  assert.deepEqual([down(1), down(4)], [routed(0), routed(1)]);
  assert.deepEqual([combine(1), combine(2), combine(3)], [down(0), routed(1), routed(2)]);
  assert.equal(log.parameters.get('router_top_k_quantize'), undefined);
});

test('a bf16 MoE call runs the bf16 grouped GEMMs on x itself, without the quantiser', () => {
  const { ctx, log } = recordingContext();
  runMoe(ctx, moeWeights({ dtype: 'bf16', experts: 8, topK: 2 }), buffer('bf16', 2048), buffer('bf16', 2048), 1);
  assert.equal(log.copies.length, 0);
  assert.equal(log.packs, 2);
  assert.deepEqual(log.grids.get('moe_pack_rows'), [
    [1024, 8, 1],
    [512, 8, 1],
  ]);
  assert.equal(log.grids.get('moe_gather_words'), undefined);
  assert.deepEqual(log.calls.slice(-4), ['router_top_k', 'moe_gate_up_bf16', 'moe_down_bf16', 'moe_combine']);
  assert.ok(!log.calls.includes('quantize_e4m3_rows'));
  // The router's launch groups: its counter (argument 6) is the scratch one, not null.
  assert.notEqual(koffi.decode(log.parameters.get('router_top_k')![0]![6]!, 'uint64_t'), 0);
});

test('a refused packing allocation gives back what it took; bad buffers are refused by name', () => {
  const { ctx, log } = recordingContext(2);
  const weights = moeWeights({ experts: 8 });
  const x = buffer('bf16', 2048);
  assert.throws(() => runMoe(ctx, weights, x, buffer('bf16', 2048), 1), /refused/);
  assert.equal(log.frees, log.allocations);
  // The pointer table's upload (after the 4 packed buffers) refused: the buffers are given back too.
  const tableRefused = recordingContext(4);
  assert.throws(() => runMoe(tableRefused.ctx, weights, x, buffer('bf16', 2048), 1), /moe expert pointers refused/);
  assert.equal(tableRefused.log.allocations, 4);
  assert.equal(tableRefused.log.frees, 4);
  const code = (expected: string) => (error: Error & { code?: string }) => error.code === expected;
  const fresh = recordingContext().ctx;
  assert.throws(() => runMoe(fresh, weights, x, buffer('bf16', 2047), 1), code('MOE_BUFFER_TOO_SMALL'));
  const shifted = { ...buffer('bf16', 4096), pointer: buffer('bf16', 1).pointer + 2n };
  assert.throws(() => runMoe(fresh, weights, x, shifted, 1), code('MOE_BUFFER_MISALIGNED'));
  assert.throws(
    () => runMoe(fresh, weights, buffer('f32', 2048), buffer('bf16', 2048), 1),
    code('TENSOR_DTYPE_UNSUPPORTED'),
  );
  assert.throws(() => runMoe(fresh, weights, x, buffer('bf16', 2048), 0), code('MOE_ROWS_INVALID'));
});

test('a SwiGLU MLP is gate|up in one launch, the SwiGLU kernel and down, in that order', () => {
  const { ctx, log } = recordingContext();
  runSwiGlu(ctx, mlp('bf16', 1024, 3072), buffer('bf16', 3 * 1024), buffer('bf16', 3 * 1024), 3);
  assert.deepEqual(log.calls, ['linears [3072,1024] + [3072,1024]', 'swiglu_bf16', 'linear [1024,3072]']);
  const lopsided = { ...mlp('bf16', 1024, 3072), up: tensor('bf16', [3072, 1000]) };
  assert.throws(() => runSwiGlu(ctx, lopsided, buffer('bf16', 1024), buffer('bf16', 1024), 1), /up is \[3072,1000\]/);
});
