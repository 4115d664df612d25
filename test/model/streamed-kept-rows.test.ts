// The streamed load of a tensor of which only some rows are kept (an untied head's candidate rows): only those rows
// are reserved and read, each run of consecutive ids one read, in the ids' order; asking for other rows is an internal
// error; an id outside the tensor is refused before anything is reserved; repeated ids keep the whole tensor and
// gather from it.
import assert from 'node:assert/strict';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { CpuBackend } from '../../src/backend/cpu/backend.ts';
import type { CpuBuffer } from '../../src/backend/cpu/tensors.ts';
import { CpuWeightStore } from '../../src/backend/cpu/weight-store.ts';
import type { WeightStore } from '../../src/backend/types.ts';
import { type FileAccess, systemFileAccess } from '../../src/checkpoint/direct-read.ts';
import { SafetensorsCheckpoint } from '../../src/checkpoint/safetensors-reader.ts';
import { writeSafetensors } from '../../src/checkpoint/safetensors-writer.ts';
import { makeTensor } from '../../src/checkpoint/tensor.ts';
import { StreamedSource } from '../../src/model/streamed-source.ts';
import type { TensorSpec } from '../../src/model/weights.ts';

const ROWS = 1024;
const COLS = 64;
const ROW_BYTES = COLS * 2;

function spec(name: string, shape: readonly number[]): TensorSpec {
  return {
    name,
    role: 'output_head',
    part: 'backbone',
    dtype: 'BF16',
    accepts: ['BF16'],
    shape,
    writesResidual: false,
  };
}

/** bf16 bit patterns that say where they lie: element i of a tensor seeded s holds (s · 7919 + i) mod 65536. */
function pattern(seed: number, count: number): Uint8Array {
  const values = new Uint16Array(count);
  for (let i = 0; i < count; i++) values[i] = (seed * 7919 + i) % 65536;
  return new Uint8Array(values.buffer);
}

const scratch = await mkdtemp(join(tmpdir(), 'drama3-kept-rows-'));
after(() => rm(scratch, { recursive: true, force: true }));
const file = join(scratch, 'model.safetensors');
const head = pattern(2, ROWS * COLS);
await writeSafetensors(file, [
  ['a', makeTensor('BF16', [4, 16], pattern(1, 64))],
  ['head', makeTensor('BF16', [ROWS, COLS], head)],
  ['z', makeTensor('BF16', [4, 16], pattern(3, 64))],
]);
const SPECS = [spec('a', [4, 16]), spec('head', [ROWS, COLS]), spec('z', [4, 16])];

/** A cpu weight store that counts the bytes it is asked to reserve, and a file access that counts bytes read. */
function counted() {
  const backend = new CpuBackend();
  const inner = new CpuWeightStore(backend);
  const reserved: number[] = [];
  const store: WeightStore<CpuBuffer> = {
    slots: (bytes) => inner.slots(bytes),
    reserve(bytes, label) {
      reserved.push(bytes);
      return inner.reserve(bytes, label);
    },
    write: (block, offset, source) => inner.write(block, offset, source),
    fence: () => inner.fence(),
    tensor: (block, offset, dtype, shape) => inner.tensor(block, offset, dtype, shape),
    gatherRows: (block, offset, rowBytes, ids, label) => inner.gatherRows(block, offset, rowBytes, ids, label),
    release: () => inner.release(),
  };
  let bytesRead = 0;
  const access: FileAccess = {
    async open(path, direct) {
      const handle = await systemFileAccess.open(path, direct);
      return {
        read: async (target, position) => {
          const count = await handle.read(target, position);
          bytesRead += count;
          return count;
        },
        close: handle.close,
      };
    },
  };
  return { backend, store, reserved, access, bytesRead: () => bytesRead };
}

async function load(ids: Int32Array, setup = counted()) {
  const checkpoint = await SafetensorsCheckpoint.open(file);
  try {
    const options = { slotBytes: 4096, access: setup.access };
    const kept = new Map([['head', ids]]);
    const source = await StreamedSource.load(checkpoint, setup.backend, setup.store, SPECS, options, kept);
    return { source, setup };
  } finally {
    await checkpoint.close();
  }
}

function rowsOf(ids: Int32Array): Uint8Array {
  const out = new Uint8Array(ids.length * ROW_BYTES);
  ids.forEach((id, row) => {
    out.set(head.subarray(id * ROW_BYTES, (id + 1) * ROW_BYTES), row * ROW_BYTES);
  });
  return out;
}

function bytesOf(data: CpuBuffer): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

describe('a streamed tensor of which only some rows are kept', () => {
  it('reserves and reads only those rows, in the order asked', async () => {
    const ids = Int32Array.from([1000, 1001, 1002, 7, 8, 1023]);
    const { source, setup } = await load(ids);
    const rows = await source.rows('head', ids);
    assert.deepEqual(rows.shape, [ids.length, COLS]);
    assert.deepEqual(bytesOf(rows.data), rowsOf(ids));
    assert.deepEqual(bytesOf((await source.tensor('a')).data), pattern(1, 64));
    assert.deepEqual(bytesOf((await source.tensor('z')).data), pattern(3, 64));
    assert.deepEqual(setup.reserved, [128, ids.length * ROW_BYTES, 128], 'blocks reserved: a, the kept rows, z');
    assert.equal(source.report.bytes, 128 + ids.length * ROW_BYTES + 128, 'bytes streamed');
    const fileBytes = (await stat(file)).size;
    assert.ok(setup.bytesRead() < 8 * 4096, `${setup.bytesRead()} of the file's ${fileBytes} bytes read`);
  });

  it('refuses other rows than those kept, as an internal error', async () => {
    const { source } = await load(Int32Array.from([5, 6]));
    await assert.rejects(source.rows('head', Int32Array.from([6, 5])), { code: 'TENSOR_ROWS_NOT_KEPT' });
  });

  it('refuses an id outside the tensor before reserving anything', async () => {
    const setup = counted();
    await assert.rejects(load(Int32Array.from([3, ROWS]), setup), (error: Error) => {
      assert.equal((error as { code?: string }).code, 'TENSOR_ROW_OUT_OF_RANGE');
      assert.match(error.message, /row 1024 lies outside the 1024 rows of head/);
      return true;
    });
    assert.deepEqual(setup.reserved, []);
  });

  it('keeps the whole tensor and gathers from it when ids repeat', async () => {
    const ids = Int32Array.from([9, 9, 2]);
    const { source, setup } = await load(ids);
    assert.deepEqual(setup.reserved, [128, ROWS * ROW_BYTES, 128]);
    assert.deepEqual(bytesOf((await source.rows('head', ids)).data), rowsOf(ids));
  });
});
