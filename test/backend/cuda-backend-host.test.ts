// The cuda backend without a GPU: over a host imitation of the driver (support/fake-cuda.ts) its storage ops really
// move bytes, its launches are recorded, and stream capture is imitated. Checks argument refusals by name, view
// ranges, what each op launches, scratch reuse after plan, the step graphs (record once, replay, re-record after a
// growth, run directly when a recording fails) and, on the cpu, the model's step through a captureStep hook.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { CpuBackend } from '../../src/backend/cpu/backend.ts';
import type { CpuBuffer } from '../../src/backend/cpu/tensors.ts';
import { CudaBackend, LINEAR_WORKSPACE, TAIL_BELOW_MOST_ROWS } from '../../src/backend/cuda/backend.ts';
import { gemmWorkspaceBytes } from '../../src/backend/cuda/ops/gemm.ts';
import { type Backend, LANE_ENTRY, RAS_WINDOW } from '../../src/backend/types.ts';
import { loadSpeechModel } from '../../src/model/load-model.ts';
import { DEFAULT_SAMPLING } from '../../src/model/types.ts';
import { float32ToBf16Bits } from '../../src/numeric/dtypes.ts';
import { samplePrompt, tinyCheckpointDir } from '../model/tiny-checkpoint.ts';
import { FakeDriver, fakeContext, observeArguments } from './support/fake-cuda.ts';

function fakeBackend(): { backend: CudaBackend; driver: FakeDriver } {
  const driver = new FakeDriver();
  const remove = observeArguments(driver);
  after(remove);
  return { backend: new CudaBackend(fakeContext(driver)), driver };
}

function lastLaunch(driver: FakeDriver) {
  const launch = driver.launches.at(-1);
  assert.ok(launch !== undefined, 'a kernel was launched');
  return launch;
}

describe('cuda backend storage', () => {
  test('allocate gives zeroed device memory and counts; fromHost checks the elements and uploads them', () => {
    const { backend, driver } = fakeBackend();
    const before = backend.allocations;
    const tensor = backend.allocate('f32', [3, 5]);
    assert.equal(backend.allocations, before + 1);
    assert.ok(driver.events.includes('fill bytes'), 'the allocation is zeroed on the stream');
    assert.deepEqual([...backend.toHost(tensor.data, 0, 15)], new Array(15).fill(0));
    const bits = Uint16Array.from([1, -2.5, 0.375, 3].map(float32ToBf16Bits));
    const weights = backend.fromHost('bf16', [2, 2], bits);
    assert.equal(backend.allocations, before + 1, 'uploads are weights, not counted allocations');
    assert.deepEqual([...backend.toHost(weights.data, 1, 3)], [-2.5, 0.375, 3]);
    const e4m3 = backend.fromHost('e4m3', [1, 3], Uint8Array.from([0x38, 0xb8, 0x7e]));
    assert.deepEqual([...backend.toHost(e4m3.data, 0, 3)], [1, -1, 448]);
    assert.throws(() => backend.fromHost('bf16', [2, 3], bits), { code: 'TENSOR_SIZE_MISMATCH' });
    assert.throws(() => backend.fromHost('bf16', [4], new Float32Array(4)), { code: 'TENSOR_DTYPE_MISMATCH' });
    assert.throws(() => backend.fromHost('i32', [4], new Float32Array(4)), { code: 'TENSOR_DTYPE_MISMATCH' });
    assert.throws(() => backend.allocate('bf16', [2, -1]), { code: 'TENSOR_SHAPE_INVALID' });
  });

  test('storage no step reads (a snapshot) is not counted, so recorded steps stay valid', () => {
    const { backend } = fakeBackend();
    const before = backend.allocations;
    const snapshot = backend.allocate('bf16', [2, 3], true);
    assert.equal(backend.allocations, before);
    assert.deepEqual([...backend.toHost(snapshot.data, 0, 6)], new Array(6).fill(0), 'zeroed all the same');
    backend.release([snapshot]);
    backend.allocate('bf16', [2, 3]);
    assert.equal(backend.allocations, before + 1);
  });

  test('release frees allocated tensors once the queued work is done, once each; a second release or a view is refused', () => {
    const { backend, driver } = fakeBackend();
    const used = () => backend.cuda.memory.usage('device').usedBytes;
    const before = used();
    const first = backend.allocate('bf16', [2, 3]);
    const second = backend.allocate('i32', [4]);
    assert.equal(used() - before, 2 * 3 * 2 + 4 * 4);
    const free = driver.freeDevice.bind(driver);
    driver.freeDevice = (pointer) => {
      driver.events.push('free');
      free(pointer);
    };
    backend.release([first, second]);
    assert.equal(used(), before, 'the ledger is back where it stood');
    assert.deepEqual(driver.events.slice(-3), ['synchronize', 'free', 'free']);
    assert.throws(() => backend.release([first]), { code: 'TENSOR_NOT_HELD' });
    const third = backend.allocate('f32', [2, 2]);
    assert.throws(() => backend.release([backend.viewRows(third, 1, 1)]), { code: 'TENSOR_NOT_HELD' });
    backend.release([third]);
    assert.equal(used(), before);
  });

  test('writeIntegers and readIntegers move i32 elements at an offset, and refuse a span outside the tensor', () => {
    const { backend } = fakeBackend();
    const table = backend.allocate('i32', [4, 3]);
    backend.writeIntegers(table, 5, Int32Array.from([7, -1, 9]));
    const back = new Int32Array(5);
    backend.readIntegers(table, 4, back);
    assert.deepEqual([...back], [0, 7, -1, 9, 0]);
    assert.throws(() => backend.writeIntegers(table, 10, new Int32Array(3)), { code: 'VIEW_OUT_OF_RANGE' });
    assert.throws(() => backend.readIntegers(table, -1, new Int32Array(1)), { code: 'VIEW_OUT_OF_RANGE' });
    const floats = backend.allocate('f32', [4]);
    assert.throws(() => backend.writeIntegers(floats, 0, new Int32Array(1)), { code: 'TENSOR_DTYPE_UNSUPPORTED' });
  });

  test('readIntegers copies through the pinned staging ring, kept for the next read, and gives it back on close', () => {
    const { backend, driver } = fakeBackend();
    const table = backend.allocate('i32', [4, 3]);
    backend.writeIntegers(
      table,
      0,
      Int32Array.from({ length: 12 }, (_, index) => index * 3 - 5),
    );
    const pinned = () => backend.cuda.memory.usage('pinned-host').usedBytes;
    const first = new Int32Array(6);
    backend.readIntegers(table, 3, first);
    assert.deepEqual([...first], [4, 7, 10, 13, 16, 19]);
    assert.ok(driver.events.includes('copy device to pinned host'), 'the read went through pinned memory');
    const held = pinned();
    assert.ok(held >= first.byteLength);
    const second = new Int32Array(12);
    backend.readIntegers(table, 0, second);
    assert.deepEqual([...second], [-5, -2, 1, 4, 7, 10, 13, 16, 19, 22, 25, 28]);
    assert.equal(pinned(), held, 'the second read reused the buffer');
    backend.close();
    assert.equal(pinned(), 0, 'closing gave the buffer back');
  });

  test('view and viewRows share the allocation at the element offset and refuse a range outside it', () => {
    const { backend } = fakeBackend();
    const tensor = backend.allocate('bf16', [6, 4, 2]);
    const rows = backend.viewRows(tensor, 2, 3);
    assert.deepEqual(rows.shape, [3, 4, 2]);
    assert.equal(rows.data.pointer, tensor.data.pointer + BigInt(2 * 8 * 2));
    assert.equal(rows.data.elements, 24);
    assert.equal(backend.view(rows.data, 4, 20).pointer, rows.data.pointer + 8n);
    assert.throws(() => backend.viewRows(tensor, 4, 3), { code: 'VIEW_OUT_OF_RANGE' });
    assert.throws(() => backend.viewRows(tensor, -1, 1), { code: 'VIEW_OUT_OF_RANGE' });
    assert.throws(() => backend.view(rows.data, 20, 5), { code: 'VIEW_OUT_OF_RANGE' });
  });

  test('fillSlot sets one slot only (i32, f32 by words; bf16 by the 16-bit fill kernel); copySlot copies rows', () => {
    const { backend, driver } = fakeBackend();
    const window = backend.allocate('i32', [3, RAS_WINDOW]);
    backend.fillSlot(window, 1, -1);
    const values = backend.toHost(window.data, 0, 3 * RAS_WINDOW);
    assert.deepEqual([...values], [...new Array(16).fill(0), ...new Array(16).fill(-1), ...new Array(16).fill(0)]);
    const state = backend.allocate('f32', [2, 2, 3]);
    backend.fillSlot(state, 0, 0.5);
    assert.deepEqual([...backend.toHost(state.data, 0, 12)], [...new Array(6).fill(0.5), ...new Array(6).fill(0)]);
    const conv = backend.allocate('bf16', [3, 3, 8]);
    backend.fillSlot(conv, 2, 1.5);
    const fill = lastLaunch(driver);
    assert.equal(fill.name, 'fill_half_words');
    assert.equal(fill.words.getBigUint64(0, true), conv.data.pointer + BigInt(2 * 24 * 2));
    assert.equal(fill.words.getUint32(8, true), float32ToBf16Bits(1.5));
    assert.equal(fill.words.getBigInt64(16, true), 24n);
    assert.throws(() => backend.fillSlot(window, 3, 0), { code: 'SLOT_OUT_OF_RANGE' });
    assert.throws(() => backend.fillSlot(window, 0, 0.5), { code: 'FILL_VALUE_INVALID' });
    const codes = backend.fromHost('e4m3', [2, 2], new Uint8Array(4));
    assert.throws(() => backend.fillSlot(codes, 0, 0), { code: 'FILL_DTYPE_UNSUPPORTED' });

    const keys = backend.allocate('f32', [2, 4, 3]);
    backend.fillSlot(keys, 0, 2);
    const part = backend.allocate('f32', [1, 2, 3]);
    backend.copySlot(keys, 0, part, 0, 2);
    assert.deepEqual([...backend.toHost(part.data, 0, 6)], new Array(6).fill(2));
    backend.copySlot(part, 0, keys, 1, 2);
    assert.deepEqual([...backend.toHost(keys.data, 12, 12)], [...new Array(6).fill(2), ...new Array(6).fill(0)]);
    assert.throws(() => backend.copySlot(keys, 0, part, 0, 3), { code: 'SLOT_COPY_MISMATCH' });
    assert.throws(() => backend.copySlot(keys, 0, conv, 0, 1), { code: 'SLOT_COPY_MISMATCH' });
  });
});

describe('cuda backend ops', () => {
  test('linear runs bf16 weights only, bf16 out unless the output buffer is f32', () => {
    const { backend, driver } = fakeBackend();
    const x = backend.allocate('bf16', [4, 128]).data;
    const weight = backend.allocate('bf16', [64, 128]);
    backend.linear(x, weight, backend.allocate('bf16', [4, 64]).data, 4);
    const outputFp32 = (launch: { words: DataView }) => launch.words.getInt32(9 * 8, true);
    const bf16Launch = driver.launches.find((launch) => launch.name.startsWith('gemm_rows'))!;
    assert.equal(outputFp32(bf16Launch), 0);
    backend.linear(x, weight, backend.allocate('f32', [4, 64]).data, 4);
    const f32Launch = driver.launches.filter((launch) => launch.name.startsWith('gemm_rows')).at(-1)!;
    assert.equal(outputFp32(f32Launch), 1);
    const fp8 = { ...backend.fromHost('e4m3', [64, 128], new Uint8Array(64 * 128)), scales: weight };
    assert.throws(() => backend.linear(x, fp8, backend.allocate('bf16', [4, 64]).data, 4), {
      code: 'LINEAR_WEIGHT_DTYPE_UNSUPPORTED',
    });
    assert.throws(() => backend.linear(x, weight, backend.allocate('bf16', [2, 64]).data, 4), {
      code: 'TENSOR_TOO_SMALL',
    });
    assert.throws(() => backend.linear(x, weight, backend.allocate('i32', [4, 64]).data, 4), {
      code: 'TENSOR_DTYPE_UNSUPPORTED',
    });
  });

  test('the linear workspace is sized at the largest call for every smaller one: no growth after it', () => {
    const { backend } = fakeBackend();
    const [outFeatures, inFeatures] = [256, 2048];
    const weight = backend.allocate('bf16', [outFeatures, inFeatures]);
    const run = (rows: number) => {
      const x = backend.allocate('bf16', [rows, inFeatures]).data;
      const out = backend.allocate('bf16', [rows, outFeatures]).data;
      const before = backend.allocations;
      backend.linear(x, weight, out, rows);
      return backend.allocations - before;
    };
    assert.ok(gemmWorkspaceBytes(64, outFeatures, inFeatures) > 0, 'this geometry splits K');
    assert.equal(gemmWorkspaceBytes(257, outFeatures, inFeatures), 0, 'a long call does not split');
    assert.equal(run(257), 1, 'the first call sizes the workspace');
    for (const rows of [1, 8, 16, 17, 64, 65, 257]) assert.equal(run(rows), 0, `${rows} rows grew the workspace`);
    assert.ok(backend.scratch.heldBytes >= gemmWorkspaceBytes(64, outFeatures, inFeatures));
    assert.equal(LINEAR_WORKSPACE, 'linear.workspace');
  });

  test('the sampler reads bf16 or f32 logits and writes records: main at fields 0–1, code[column] at 1 + column', () => {
    const { backend, driver } = fakeBackend();
    const lanes = backend.allocate('i32', [2, LANE_ENTRY]).data;
    const rasWindow = backend.allocate('i32', [3, RAS_WINDOW]);
    const records = backend.allocate('i32', [2, 11]);
    const candidates = backend.allocate('i32', [4097]);
    const state = { lanes, rasWindow };
    backend.sampleMain(backend.allocate('bf16', [2, 4097]).data, 4097, 4096, candidates, state, records, 2);
    const main = lastLaunch(driver);
    assert.equal(main.name, 'sample_main_bf16');
    assert.deepEqual(main.shape.grid, [2, 1, 1]);
    assert.equal(main.words.getBigUint64(0, true), records.data.pointer);
    assert.equal(main.words.getInt32(8, true), 11);
    assert.equal(main.words.getBigUint64(6 * 8, true), candidates.data.pointer);
    backend.sampleMain(backend.allocate('f32', [2, 4097]).data, 4097, 4096, candidates, state, records, 2);
    assert.equal(lastLaunch(driver).name, 'sample_main');
    backend.sampleCode(backend.allocate('bf16', [2, 1024]).data, 1024, 9, state, records, 2);
    const code = lastLaunch(driver);
    assert.equal(code.name, 'sample_code_bf16');
    assert.deepEqual([code.words.getInt32(8, true), code.words.getInt32(16, true)], [11, 10]);
    const logits = backend.allocate('bf16', [2, 1024]).data;
    assert.throws(() => backend.sampleCode(logits, 1024, 10, state, records, 2), { code: 'SAMPLER_COLUMN_INVALID' });
    assert.throws(() => backend.sampleCode(logits, 1024, 0, state, records, 2), { code: 'SAMPLER_COLUMN_INVALID' });
    assert.throws(() => backend.sampleCode(logits, 1024, 3, state, records, 3), { code: 'TENSOR_TOO_SMALL' });
    const ints = backend.allocate('i32', [2, 1024]).data;
    assert.throws(() => backend.sampleCode(ints, 1024, 3, state, records, 2), { code: 'TENSOR_DTYPE_UNSUPPORTED' });
    const short = backend.allocate('i32', [100]);
    assert.throws(() => backend.sampleMain(logits, 1024, 1000, short, state, records, 2), {
      code: 'TENSOR_TOO_SMALL',
    });
  });

  test('norms take bf16 or f32 weights, record moves use the lane table, activations must be bf16', () => {
    const { backend, driver } = fakeBackend();
    const x = backend.allocate('bf16', [3, 256]).data;
    backend.zeroCentredRmsNorm(x, backend.allocate('bf16', [256]), x, 3, 256, 1e-6);
    assert.equal(lastLaunch(driver).name, 'rms_norm_bf16');
    assert.equal(lastLaunch(driver).words.getInt32(6 * 8, true), 1, 'the zero-centred form');
    backend.zeroCentredRmsNorm(x, backend.allocate('f32', [256]), x, 3, 256, 1e-6);
    assert.equal(lastLaunch(driver).name, 'rms_norm_f32_weight_bf16');
    const e4m3 = backend.fromHost('e4m3', [256], new Uint8Array(256));
    assert.throws(() => backend.zeroCentredRmsNorm(x, e4m3, x, 3, 256, 1e-6), {
      code: 'NORM_WEIGHT_DTYPE_UNSUPPORTED',
    });
    assert.throws(() => backend.zeroCentredRmsNorm(x, backend.allocate('bf16', [128]), x, 3, 256, 1e-6), {
      code: 'TENSOR_TOO_SMALL',
    });
    const residual = backend.allocate('bf16', [3, 256]).data;
    const launchesBefore = driver.launches.length;
    backend.addZeroCentredRmsNorm(residual, x, backend.allocate('bf16', [256]), x, 3, 256, 1e-6);
    assert.equal(driver.launches.length, launchesBefore + 1, 'the residual add and its norm are one launch');
    assert.equal(lastLaunch(driver).name, 'add_rms_norm_bf16');
    backend.addZeroCentredRmsNorm(residual, x, backend.allocate('f32', [256]), x, 3, 256, 1e-6);
    assert.equal(lastLaunch(driver).name, 'add_rms_norm_f32_weight_bf16');
    assert.throws(
      () => backend.addZeroCentredRmsNorm(residual, x, backend.allocate('bf16', [256]), residual, 3, 256, 1e-6),
      {
        code: 'KERNEL_ARGUMENT_INVALID',
      },
    );
    assert.throws(
      () =>
        backend.addZeroCentredRmsNorm(
          residual,
          backend.view(x, 0, 100),
          backend.allocate('bf16', [256]),
          x,
          3,
          256,
          1e-6,
        ),
      {
        code: 'TENSOR_TOO_SMALL',
      },
    );
    const slab = backend.allocate('i32', [5, 11]);
    const records = backend.allocate('i32', [4, 11]);
    const lanes = backend.allocate('i32', [4, LANE_ENTRY]).data;
    backend.gatherSlotRecords(slab, lanes, records, 4);
    assert.equal(lastLaunch(driver).name, 'gather_slot_records');
    assert.equal(lastLaunch(driver).words.getInt32(3 * 8, true), LANE_ENTRY);
    backend.scatterSlotRecords(records, lanes, slab, 4);
    assert.equal(lastLaunch(driver).name, 'scatter_slot_records');
    assert.throws(() => backend.gatherSlotRecords(slab, lanes, records, 5), { code: 'TENSOR_SHAPE_MISMATCH' });
    const floats = backend.allocate('f32', [3, 256]).data;
    assert.throws(() => backend.add(floats, x, 768), { code: 'TENSOR_DTYPE_UNSUPPORTED' });
    assert.throws(() => backend.add(x, x, 769), { code: 'TENSOR_TOO_SMALL' });
  });

  test('prepared values are made once per weights object and label, and countAllocation counts', () => {
    const { backend } = fakeBackend();
    const key = {};
    let made = 0;
    const make = () => ({ made: ++made });
    const first = backend.blocks.prepared(key, 'experts', make);
    assert.equal(backend.blocks.prepared(key, 'experts', make), first);
    assert.notEqual(backend.blocks.prepared(key, 'router', make), first);
    assert.notEqual(backend.blocks.prepared({}, 'experts', make), first);
    assert.equal(made, 3);
    const before = backend.allocations;
    backend.blocks.countAllocation();
    assert.equal(backend.allocations, before + 1);
  });
});

describe('step graphs', () => {
  test('a key records once and replays; a growth re-records; a failed recording runs the step directly', () => {
    const { backend, driver } = fakeBackend();
    const x = backend.allocate('bf16', [2, 64]).data;
    let calls = 0;
    const step = () => {
      calls += 1;
      backend.add(x, x, 128);
    };
    backend.captureStep('step2', step);
    assert.equal(calls, 1);
    assert.deepEqual(driver.events.slice(-5), [
      'begin capture',
      'record add_bf16',
      'end capture',
      'instantiate',
      'launch graph',
    ]);
    backend.captureStep('step2', step);
    assert.equal(calls, 1, 'a replay does not enqueue again');
    assert.deepEqual(driver.events.slice(-3), ['record event', 'launch graph', 'record event'], 'a replay is timed');
    assert.deepEqual(backend.stepGraphStats(), { recorded: 1, direct: 0, replays: 1, replayMs: 2.5 });
    assert.deepEqual(
      driver.events.slice(-2),
      ['query event', 'synchronize event'],
      'the stats add a replay once a query finds it finished',
    );
    backend.allocate('bf16', [4]);
    backend.captureStep('step2', step);
    assert.equal(calls, 2, 'after an allocation the step is recorded again');
    assert.deepEqual(driver.events.slice(-3), ['end capture', 'update', 'launch graph']);

    // A step that grows scratch synchronises: the recording fails, nothing ran, so it runs directly (and grows).
    let size = 1024;
    const growing = () => {
      backend.scratch.bytes('test.growing', size);
      backend.add(x, x, 128);
    };
    backend.captureStep('step3', growing);
    assert.ok(backend.graphs.has('step3'));
    backend.allocate('bf16', [4]);
    size = 4096;
    const before = backend.allocations;
    const launchesBefore = driver.launches.length;
    backend.captureStep('step3', growing);
    assert.equal(backend.graphs.fallbacks, 1);
    assert.equal(backend.graphs.has('step3'), false, 'the failed recording is dropped');
    assert.equal(backend.allocations, before + 1, 'the direct run grew the scratch');
    assert.equal(driver.launches.length, launchesBefore + 1, 'the failed recording launched nothing');
    assert.equal(driver.launches.at(-1)!.captured, false, 'the direct run launched the kernel');
    backend.captureStep('step3', growing);
    assert.ok(backend.graphs.has('step3'), 'the next call records with the grown buffers');
    assert.equal(driver.events.at(-1), 'launch graph');
    assert.deepEqual(
      backend.stepGraphStats(),
      { recorded: 4, direct: 1, replays: 1, replayMs: 2.5 },
      'step2 twice, step3 twice; one direct; step2 replayed once',
    );
  });

  test('replays take turns with two timing pairs: a launch never waits for the step just before it', () => {
    const { backend, driver } = fakeBackend();
    const x = backend.allocate('bf16', [2, 64]).data;
    const table = backend.allocate('i32', [4]);
    const step = () => backend.add(x, x, 128);
    backend.captureStep('step2', step);
    const replay = () => {
      const from = driver.events.length;
      backend.captureStep('step2', step);
      return driver.events.slice(from);
    };
    assert.deepEqual(replay(), ['create event', 'create event', 'record event', 'launch graph', 'record event']);
    assert.deepEqual(replay(), ['create event', 'create event', 'record event', 'launch graph', 'record event']);
    // The third takes the first replay's pair: that step is two back, so reading its time seldom waits.
    assert.deepEqual(replay(), ['synchronize event', 'record event', 'launch graph', 'record event']);
    assert.deepEqual(backend.stepGraphStats(), { recorded: 1, direct: 0, replays: 3, replayMs: 7.5 });
    // A replay behind a copy still queued has not finished: the stats leave it for later rather than wait.
    backend.queueIntegers(table, 0, Int32Array.from([1, 2, 3, 4]));
    replay();
    const from = driver.events.length;
    assert.deepEqual(backend.stepGraphStats(), { recorded: 1, direct: 0, replays: 3, replayMs: 7.5 });
    assert.ok(!driver.events.slice(from).includes('synchronize event'), 'the stats did not wait');
    driver.synchronizeStream();
    assert.equal(backend.stepGraphStats().replays, 4);
  });

  test('a step of up to 16 rows queues its tail a priority below the step, a larger one level with it', () => {
    const { backend } = fakeBackend();
    const asked: string[] = [];
    Object.assign(backend.cuda, {
      tail: (work: () => void, below = false) => {
        asked.push(below ? 'below' : 'level');
        work();
      },
    });
    for (const rows of [1, 2, 4, 8, 16, 32, 64]) backend.tail(() => {}, rows);
    assert.deepEqual(asked, ['below', 'below', 'below', 'below', 'below', 'level', 'level']);
    assert.equal(TAIL_BELOW_MOST_ROWS, 16);
  });

  test('an op that refuses its arguments refuses the same way inside a recording', () => {
    const { backend } = fakeBackend();
    const x = backend.allocate('bf16', [8]).data;
    assert.throws(() => backend.captureStep('bad', () => backend.add(x, x, 9)), { code: 'TENSOR_TOO_SMALL' });
    assert.equal(backend.graphs.has('bad'), false);
  });
});

describe('the model step through captureStep (cpu)', () => {
  test('the cpu backend has no captureStep: the model runs the work itself', () => {
    const cpu: Backend<CpuBuffer> = new CpuBackend();
    assert.equal(cpu.captureStep, undefined);
  });

  test('tables are written before the work, records read after it; plan records each bucket; frames unchanged', async () => {
    const dir = await tinyCheckpointDir();
    const options = { prefillChunk: 16, capacity: { lanes: 4, rowsPerLane: 128 } };
    const plain = await loadSpeechModel(dir, new CpuBackend(), options);
    const hooked = new CpuBackend();
    const keys: string[] = [];
    let inside = false;
    const hostTransfers: string[] = [];
    for (const name of ['writeIntegers', 'queueIntegers', 'readIntegers', 'readIntegersLater'] as const) {
      const original = (hooked[name] as (...args: unknown[]) => unknown).bind(hooked);
      Object.assign(hooked, {
        [name]: (...args: unknown[]) => {
          if (inside) hostTransfers.push(name);
          return original(...args);
        },
      });
    }
    Object.assign(hooked, {
      captureStep(key: string, enqueue: () => void) {
        keys.push(key);
        inside = true;
        enqueue();
        inside = false;
      },
    });
    const model = await loadSpeechModel<CpuBuffer>(dir, hooked, options);
    assert.deepEqual(
      keys.splice(0),
      ['step1', 'tail1', 'step2', 'tail2', 'step4', 'tail4'],
      'planning sized the scratch, then recorded each bucket: its head and its tail',
    );
    const samplerAfterPlan = model.stageTimes.sampler;
    const frames = (target: typeof plain) => {
      const prompt = samplePrompt(target.candidates.semanticBegin);
      const lanes = [3, 4, 5].map((seed) => target.newLane({ ...DEFAULT_SAMPLING, seed }));
      for (const lane of lanes) target.prefill(lane, prompt, 0, prompt.tokens.length);
      const drawn = [target.step(lanes), target.step(lanes.slice(0, 1)), target.step(lanes.slice(0, 2))];
      for (const lane of lanes) target.release(lane);
      return drawn;
    };
    assert.deepEqual(frames(model), frames(plain), 'three lanes stepped as a bucket of four draw their own frames');
    assert.deepEqual(keys, ['step4', 'tail4', 'step1', 'tail1', 'step2', 'tail2']);
    assert.deepEqual(hostTransfers, [], 'no table write or read-back inside the step work');
    assert.ok(model.stageTimes.backbone > 0);
    assert.equal(model.stageTimes.sampler, samplerAfterPlan, 'with captureStep the whole step counts as backbone');
  });
});
