// safetensors: a file written by the Python library reads correctly; our single and sharded writers round-trip;
// every malformed file is refused by name; a failed sharded write leaves nothing behind.
// python-written.safetensors was made by safetensors 0.8.0 (safetensors.numpy.save_file) with the tensors in
// `pythonTensors` below and metadata {"format": "pt", "note": "safetensors.numpy"}.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, open, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseHeaderLength } from '../../src/checkpoint/safetensors-format.ts';
import { SafetensorsCheckpoint } from '../../src/checkpoint/safetensors-reader.ts';
import { writeSafetensors, writeShardedSafetensors } from '../../src/checkpoint/safetensors-writer.ts';
import {
  float32ToTensor,
  type HostTensor,
  int32ToTensor,
  makeTensor,
  tensorToFloat32,
  tensorToInt32,
} from '../../src/checkpoint/tensor.ts';
import { DramaError } from '../../src/errors.ts';

const refused = (code: string, mention?: string) => (error: unknown) =>
  error instanceof DramaError && error.code === code && (mention === undefined || error.message.includes(mention));

let folder = '';
before(async () => {
  folder = await mkdtemp(join(tmpdir(), 'drama3-safetensors-'));
});
after(async () => {
  await rm(folder, { recursive: true, force: true });
});

function sampleTensors(): [string, HostTensor][] {
  return [
    ['embed.weight', float32ToTensor(Float32Array.from([1, -2, 3.5, 0.25, -0, 7]), 'BF16', [2, 3])],
    ['norm.weight', float32ToTensor(Float32Array.from([0.5, 1.5, -1]), 'F32', [3])],
    ['experts.0.weight', float32ToTensor(Float32Array.from([448, -1, 0.125, 3]), 'F8_E4M3', [2, 2])],
    ['experts.0.scale', float32ToTensor(Float32Array.from([0.001]), 'F32', [1, 1])],
    ['codec.alpha', float32ToTensor(Float32Array.from([1, 2]), 'F16', [2])],
    ['positions', int32ToTensor([0, 1, 2], 'I64', [3])],
    ['ids', int32ToTensor([-5, 6], 'I32', [2])],
    ['mask', int32ToTensor([1, 0, 1, 1, 0], 'U8', [5])],
    ['empty', makeTensor('F32', [0, 4], new Uint8Array(0))],
  ];
}

async function expectSameTensors(checkpoint: SafetensorsCheckpoint, tensors: [string, HostTensor][]): Promise<void> {
  assert.deepEqual(checkpoint.names().sort(), tensors.map(([name]) => name).sort());
  for (const [name, tensor] of tensors) {
    const read = await checkpoint.read(name);
    assert.equal(read.dtype, tensor.dtype, name);
    assert.deepEqual(read.shape, tensor.shape, name);
    assert.deepEqual(read.data, tensor.data, name);
    // A range read owns exactly the tensor's bytes: no view into a larger (shard-sized) buffer.
    assert.equal(read.data.buffer.byteLength, tensor.data.byteLength, name);
  }
}

/** A file from a header (object or raw text) and data bytes; `declaredLength` overrides the length prefix. */
async function rawFile(name: string, header: unknown, data: Uint8Array, declaredLength?: number): Promise<string> {
  const json = Buffer.from(typeof header === 'string' ? header : JSON.stringify(header));
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(declaredLength ?? json.byteLength));
  const path = join(folder, name);
  await writeFile(path, Buffer.concat([prefix, json, data]));
  return path;
}

describe('safetensors reading', () => {
  it('reads a file written by the Python library', async () => {
    const path = new URL('../fixtures/checkpoint/python-written.safetensors', import.meta.url).pathname;
    const checkpoint = await SafetensorsCheckpoint.open(path);
    assert.deepEqual(checkpoint.metadata, { format: 'pt', note: 'safetensors.numpy' });
    assert.deepEqual([...tensorToFloat32(await checkpoint.read('model.f32'))], [-1, -0.5, 0, 0.5, 1, 1.5]);
    assert.deepEqual(checkpoint.info('model.f32').shape, [2, 3]);
    const f16 = [...tensorToFloat32(await checkpoint.read('model.f16'))];
    assert.deepEqual(f16, [1, -2.5, 65504, 2 ** -24]); // 6e-8 rounds to the smallest f16 subnormal
    const i64 = await checkpoint.read('model.i64');
    assert.deepEqual([...new BigInt64Array(i64.data.buffer)], [0n, -1n, 2n ** 40n]);
    assert.deepEqual([...tensorToInt32(await checkpoint.read('model.i32'))], [1, -2, 3, -4]);
    assert.deepEqual([...(await checkpoint.read('model.u8')).data], [0, 7, 255]);
    assert.deepEqual((await checkpoint.read('model.empty')).shape, [0, 2]);
    const { fileOffset, ...i32 } = checkpoint.info('model.i32');
    assert.deepEqual(i32, { dtype: 'I32', shape: [2, 2], file: path, byteLength: 16 });
    const bytes = new Uint8Array(16);
    const handle = await open(path);
    await handle.read(bytes, 0, 16, fileOffset);
    await handle.close();
    assert.deepEqual([...new Int32Array(bytes.buffer)], [1, -2, 3, -4]);
    await checkpoint.close();
  });

  it('reads part of a tensor, and refuses ranges and names it does not hold', async () => {
    const path = join(folder, 'ranges.safetensors');
    await writeSafetensors(path, sampleTensors());
    const checkpoint = await SafetensorsCheckpoint.open(path);
    const part = new Uint8Array(4);
    await checkpoint.readInto('norm.weight', part, 4);
    assert.deepEqual([...new Float32Array(part.buffer)], [1.5]);
    await assert.rejects(checkpoint.readInto('norm.weight', part, 10), refused('SAFETENSORS_RANGE_OUT_OF_TENSOR'));
    await assert.rejects(checkpoint.read('missing.weight'), refused('SAFETENSORS_TENSOR_NOT_FOUND', 'missing.weight'));
    assert.equal(checkpoint.has('missing.weight'), false);
    await checkpoint.close();
  });
});

describe('safetensors writing', () => {
  it('round-trips one file with metadata and an 8-byte aligned data start', async () => {
    const path = join(folder, 'single.safetensors');
    await writeSafetensors(path, sampleTensors(), { format: 'pt', model: 'tiny' });
    const bytes = await readFile(path);
    assert.equal(Number(bytes.readBigUInt64LE(0)) % 8, 0);
    const checkpoint = await SafetensorsCheckpoint.open(path);
    assert.deepEqual(checkpoint.metadata, { format: 'pt', model: 'tiny' });
    await expectSameTensors(checkpoint, sampleTensors());
    await checkpoint.close();
    assert.deepEqual(
      (await readdir(folder)).filter((name) => name.includes('partial')),
      [],
    );
  });

  it('shards by size, writes the index, reports progress, and reads back from the folder', async () => {
    const dir = join(folder, 'sharded');
    const progress: [number, number][] = [];
    const { files } = await writeShardedSafetensors(dir, sampleTensors(), {
      maxShardBytes: 16,
      metadata: { format: 'pt' },
      onProgress: (written, total) => progress.push([written, total]),
    });
    const total = sampleTensors().reduce((sum, [, t]) => sum + t.data.byteLength, 0);
    // Greedy in order: [embed 12] [norm 12] [experts 4 + scale 4 + alpha 4] [positions 24] [ids 8 + mask 5 + empty 0]
    assert.deepEqual(
      files.map((file) => file.slice(dir.length + 1)),
      [1, 2, 3, 4, 5].map((n) => `model-0000${n}-of-00005.safetensors`).concat('model.safetensors.index.json'),
    );
    const index = JSON.parse(await readFile(join(dir, 'model.safetensors.index.json'), 'utf8'));
    assert.equal(index.metadata.total_size, total);
    assert.equal(index.weight_map['experts.0.scale'], 'model-00003-of-00005.safetensors');
    assert.deepEqual(progress.at(-1), [total, total]);
    assert.ok(progress.every(([written], i) => i === 0 || written >= progress[i - 1]![0]));
    const checkpoint = await SafetensorsCheckpoint.open(dir);
    assert.deepEqual(checkpoint.metadata, { format: 'pt' });
    assert.equal(checkpoint.info('ids').file, join(dir, 'model-00005-of-00005.safetensors'));
    await expectSameTensors(checkpoint, sampleTensors());
    await checkpoint.close();
  });

  it('takes a lazy generator, holding one shard at a time', async () => {
    const dir = join(folder, 'lazy');
    const seen: number[] = [];
    function* lazily(): Generator<[string, HostTensor]> {
      for (const entry of sampleTensors()) yield entry;
    }
    await writeShardedSafetensors(dir, lazily(), {
      maxShardBytes: 1 << 20,
      onProgress: (_, total) => seen.push(total),
    });
    const checkpoint = await SafetensorsCheckpoint.open(join(dir, 'model.safetensors.index.json'));
    await expectSameTensors(checkpoint, sampleTensors());
    await checkpoint.close();
    assert.equal(
      seen.at(-1),
      sampleTensors().reduce((sum, [, t]) => sum + t.data.byteLength, 0),
    );
  });

  it('takes an async generator: the same files as from an array, shards written while the next is gathered', async () => {
    const fromArray = join(folder, 'from-array');
    const fromAsync = join(folder, 'from-async');
    async function* slowly(): AsyncGenerator<[string, HostTensor]> {
      for (const entry of sampleTensors()) {
        await new Promise((resolve) => setTimeout(resolve, 1));
        yield entry;
      }
    }
    await writeShardedSafetensors(fromArray, sampleTensors(), { maxShardBytes: 16 });
    await writeShardedSafetensors(fromAsync, slowly(), { maxShardBytes: 16 });
    const names = (await readdir(fromArray)).sort();
    assert.deepEqual((await readdir(fromAsync)).sort(), names);
    for (const name of names) {
      assert.deepEqual(await readFile(join(fromAsync, name)), await readFile(join(fromArray, name)), name);
    }
  });

  it('leaves nothing behind when a shard fails to write while the next is gathered', async () => {
    const dir = join(folder, 'failing-write');
    async function* tensors(): AsyncGenerator<[string, HostTensor]> {
      yield* sampleTensors();
    }
    await assert.rejects(
      writeShardedSafetensors(dir, tensors(), {
        maxShardBytes: 16,
        onProgress: (written) => {
          if (written > 20) throw new Error('disk full');
        },
      }),
      /disk full/,
    );
    assert.deepEqual(await readdir(dir), []);
  });

  it('leaves nothing behind when the tensors fail while a shard is being written', async () => {
    const dir = join(folder, 'failing-during-write');
    async function* tensors(): AsyncGenerator<[string, HostTensor]> {
      yield* sampleTensors().slice(0, 2);
      throw new Error('generator broke');
    }
    await assert.rejects(writeShardedSafetensors(dir, tensors(), { maxShardBytes: 12 }), /generator broke/);
    assert.deepEqual(await readdir(dir), []);
  });

  it('leaves nothing behind when a sharded write fails part way', async () => {
    const dir = join(folder, 'failing');
    function* failing(): Generator<[string, HostTensor]> {
      yield* sampleTensors().slice(0, 4);
      throw new Error('generator broke');
    }
    await assert.rejects(writeShardedSafetensors(dir, failing(), { maxShardBytes: 8 }), /generator broke/);
    assert.deepEqual(await readdir(dir), []);
    const twice: [string, HostTensor][] = [sampleTensors()[0]!, sampleTensors()[0]!];
    await assert.rejects(
      writeShardedSafetensors(dir, twice, { maxShardBytes: 8 }),
      refused('SAFETENSORS_DUPLICATE_TENSOR'),
    );
    assert.deepEqual(await readdir(dir), []);
  });
});

describe('safetensors refusals', () => {
  const f32x2 = { dtype: 'F32', shape: [2], data_offsets: [0, 8] };

  it('refuses a truncated file', async () => {
    const short = join(folder, 'short.safetensors');
    await writeFile(short, Uint8Array.from([1, 2, 3, 4, 5]));
    await assert.rejects(SafetensorsCheckpoint.open(short), refused('SAFETENSORS_TRUNCATED', 'too short'));
    const cut = join(folder, 'cut.safetensors');
    await writeSafetensors(cut, sampleTensors());
    const { size } = await stat(cut);
    await truncate(cut, size - 4);
    await assert.rejects(SafetensorsCheckpoint.open(cut), refused('SAFETENSORS_TRUNCATED', 'cut short'));
  });

  it('refuses a header length past the end, or past the size limit', async () => {
    const path = await rawFile('past.st', { w: f32x2 }, new Uint8Array(8), 1000);
    await assert.rejects(SafetensorsCheckpoint.open(path), refused('SAFETENSORS_HEADER_PAST_END', '1000'));
    const prefix = new Uint8Array(8);
    new DataView(prefix.buffer).setBigUint64(0, 200_000_000n, true);
    assert.throws(() => parseHeaderLength(prefix, 300_000_000, 'huge'), refused('SAFETENSORS_HEADER_TOO_LARGE'));
  });

  it('refuses bad JSON', async () => {
    await assert.rejects(
      SafetensorsCheckpoint.open(await rawFile('bad.st', '{"w": ', new Uint8Array(8))),
      refused('SAFETENSORS_BAD_JSON'),
    );
    await assert.rejects(
      SafetensorsCheckpoint.open(await rawFile('array.st', '[1, 2]', new Uint8Array(0))),
      refused('SAFETENSORS_BAD_JSON'),
    );
    const badShape = await rawFile('shape.st', { w: { ...f32x2, shape: ['2'] } }, new Uint8Array(8));
    await assert.rejects(SafetensorsCheckpoint.open(badShape), refused('SAFETENSORS_BAD_HEADER', 'shape'));
    const badMetadata = await rawFile('meta.st', { __metadata__: { n: 1 }, w: f32x2 }, new Uint8Array(8));
    await assert.rejects(SafetensorsCheckpoint.open(badMetadata), refused('SAFETENSORS_BAD_HEADER', '__metadata__.n'));
  });

  it('refuses an unknown dtype', async () => {
    const path = await rawFile('f64.st', { w: { dtype: 'F64', shape: [1], data_offsets: [0, 8] } }, new Uint8Array(8));
    await assert.rejects(SafetensorsCheckpoint.open(path), refused('SAFETENSORS_UNKNOWN_DTYPE', 'F64'));
  });

  it('refuses offsets out of range', async () => {
    const reversed = await rawFile('reversed.st', { w: { ...f32x2, data_offsets: [8, 0] } }, new Uint8Array(8));
    await assert.rejects(SafetensorsCheckpoint.open(reversed), refused('SAFETENSORS_OFFSET_OUT_OF_RANGE', '[8, 0]'));
    const negative = await rawFile('negative.st', { w: { ...f32x2, data_offsets: [-8, 0] } }, new Uint8Array(8));
    await assert.rejects(SafetensorsCheckpoint.open(negative), refused('SAFETENSORS_OFFSET_OUT_OF_RANGE'));
    const stray = await rawFile('stray.st', { a: f32x2, b: { ...f32x2, data_offsets: [64, 72] } }, new Uint8Array(16));
    await assert.rejects(SafetensorsCheckpoint.open(stray), refused('SAFETENSORS_OFFSET_OUT_OF_RANGE', 'tensor b'));
  });

  it('refuses overlapping offsets', async () => {
    const path = await rawFile('overlap.st', { a: f32x2, b: { ...f32x2, data_offsets: [4, 12] } }, new Uint8Array(12));
    await assert.rejects(SafetensorsCheckpoint.open(path), refused('SAFETENSORS_OFFSETS_OVERLAP', 'a and b'));
  });

  it('refuses a byte span that is not shape × dtype size', async () => {
    const path = await rawFile('span.st', { w: { ...f32x2, shape: [3] } }, new Uint8Array(8));
    await assert.rejects(SafetensorsCheckpoint.open(path), refused('SAFETENSORS_SIZE_MISMATCH', 'needs 12'));
  });

  it('refuses a broken index: bad JSON, a missing shard, a tensor its shard lacks, a tensor in two shards', async () => {
    const dir = join(folder, 'broken-index');
    await writeShardedSafetensors(dir, sampleTensors(), { maxShardBytes: 16 });
    const indexPath = join(dir, 'model.safetensors.index.json');
    const index = JSON.parse(await readFile(indexPath, 'utf8'));
    await writeFile(indexPath, '{"weight_map": ');
    await assert.rejects(SafetensorsCheckpoint.open(dir), refused('SAFETENSORS_INDEX_BAD_JSON'));
    await writeFile(
      indexPath,
      JSON.stringify({ weight_map: { ...index.weight_map, ghost: 'model-00001-of-00005.safetensors' } }),
    );
    await assert.rejects(SafetensorsCheckpoint.open(dir), refused('SAFETENSORS_INDEX_MISSING_TENSOR', 'ghost'));
    await writeFile(
      indexPath,
      JSON.stringify({ weight_map: { ...index.weight_map, ghost: 'model-00009-of-00009.safetensors' } }),
    );
    await assert.rejects(SafetensorsCheckpoint.open(dir), refused('SAFETENSORS_FILE_NOT_FOUND'));
    const copy = join(dir, 'copy.safetensors');
    await writeFile(copy, await readFile(join(dir, 'model-00001-of-00005.safetensors')));
    await writeFile(indexPath, JSON.stringify({ weight_map: { ...index.weight_map, other: 'copy.safetensors' } }));
    await assert.rejects(SafetensorsCheckpoint.open(dir), refused('SAFETENSORS_DUPLICATE_TENSOR', 'embed.weight'));
    await mkdir(join(folder, 'empty-folder'), { recursive: true });
    await assert.rejects(
      SafetensorsCheckpoint.open(join(folder, 'empty-folder')),
      refused('SAFETENSORS_FILE_NOT_FOUND'),
    );
  });
});
