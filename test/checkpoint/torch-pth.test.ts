// torch .pth files: files made by torch.save (tools/oracle/torch_save.py) read as torch itself reads them, our
// writer's files read back identically, and every broken or hostile file refused by name.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { scanPickle } from '../../src/checkpoint/pickle-scan.ts';
import { PickleWriter } from '../../src/checkpoint/pickle-writer.ts';
import { float32ToTensor, type HostTensor, makeTensor, tensorToFloat32 } from '../../src/checkpoint/tensor.ts';
import { torchUnpickling } from '../../src/checkpoint/torch-globals.ts';
import { readTorchCheckpoint, writeTorchCheckpoint } from '../../src/checkpoint/torch-pth.ts';
import { ZipReader } from '../../src/checkpoint/zip-reader.ts';
import { ZipWriter } from '../../src/checkpoint/zip-writer.ts';
import { DramaError } from '../../src/errors.ts';
import { writerFixtureTensors } from './writer-fixture.ts';

const fixture = (name: string): string => new URL(`../fixtures/checkpoint/${name}`, import.meta.url).pathname;
const hexOf = (data: Uint8Array): string => Buffer.from(data).toString('hex');
const refused = (code: string, mention?: string) => (error: unknown) =>
  error instanceof DramaError && error.code === code && (mention === undefined || error.message.includes(mention));

interface Described {
  dtype: string;
  shape: number[];
  hex: string;
  values: (number | string)[];
  storage_offset: number;
  contiguous: boolean;
}

function expectSameTensor(name: string, ours: HostTensor | undefined, expected: Described): void {
  assert.ok(ours !== undefined, `missing ${name}`);
  assert.equal(ours.dtype, expected.dtype, name);
  assert.deepEqual(ours.shape, expected.shape, name);
  assert.equal(hexOf(ours.data), expected.hex, name);
  if (ours.dtype.startsWith('I') || ours.dtype === 'U8') return;
  const widened = [...tensorToFloat32(ours)].map((value) => (Number.isNaN(value) ? 'NaN' : value));
  const wanted = expected.values.map((value) =>
    value === 'Infinity' ? Number.POSITIVE_INFINITY : value === '-Infinity' ? Number.NEGATIVE_INFINITY : value,
  );
  assert.deepEqual(widened, wanted, name);
}

let folder = '';
before(async () => {
  folder = await mkdtemp(join(tmpdir(), 'drama3-pth-'));
});
after(async () => {
  await rm(folder, { recursive: true, force: true });
});

/** Copies a .pth entry by entry, letting `edit` replace or drop (undefined) each entry's bytes. */
async function rezip(
  source: string,
  target: string,
  edit: (name: string, bytes: Uint8Array) => Uint8Array | undefined,
) {
  const reader = await ZipReader.open(source);
  const writer = await ZipWriter.create(target);
  for (const name of reader.names()) {
    const bytes = edit(name, await reader.readWhole(name, 1 << 20));
    if (bytes !== undefined) await writer.add(name, [bytes]);
  }
  await reader.close();
  await writer.finish();
}

/** A one-tensor state dict pickle with free storage arguments, for hand-made broken files. */
function tensorPickle(storageClass: string, storageElements: number, offset: number, size: number[], stride: number[]) {
  const writer = new PickleWriter().global('collections', 'OrderedDict').emptyTuple().reduce().mark().string('w');
  writer.global('torch._utils', '_rebuild_tensor_v2').mark();
  writer.mark().string('storage').global('torch', storageClass).string('0').string('cpu').integer(storageElements);
  writer.tuple().persistentId().integer(offset).integerTuple(size).integerTuple(stride).boolean(false);
  writer.global('collections', 'OrderedDict').emptyTuple().reduce().tuple().reduce().setItems();
  return writer.finish();
}

async function handMade(name: string, pickle: Uint8Array, storage: Uint8Array): Promise<string> {
  const path = join(folder, name);
  const writer = await ZipWriter.create(path);
  await writer.add('archive/data.pkl', [pickle]);
  await writer.add('archive/data/0', [storage]);
  await writer.add('archive/version', [new TextEncoder().encode('3\n')]);
  await writer.finish();
  return path;
}

describe('reading torch.save files', () => {
  it('reads a codec-like state dict exactly as torch.load does', async () => {
    const expected = JSON.parse(await readFile(fixture('torch-save.json'), 'utf8')) as {
      tensors: Record<string, Described>;
    };
    // The fixture does hold the hard cases: an offset view, a transposed view, a storage shared by two tensors.
    assert.equal(expected.tensors['view.offset']!.storage_offset, 5);
    assert.equal(expected.tensors['view.transposed']!.contiguous, false);
    assert.equal(expected.tensors['shared.second']!.storage_offset, 4);
    const tensors = await readTorchCheckpoint(fixture('torch-save.pth'));
    assert.deepEqual([...tensors.keys()].sort(), Object.keys(expected.tensors).sort());
    for (const [name, described] of Object.entries(expected.tensors))
      expectSameTensor(name, tensors.get(name), described);
  });

  it('reads a protocol 4 pickle', async () => {
    const tensors = await readTorchCheckpoint(fixture('torch-save-protocol4.pth'));
    assert.deepEqual([...tensorToFloat32(tensors.get('a.weight')!)], [1, 2, 3, 4]);
    assert.deepEqual(tensors.get('a.weight')!.shape, [2, 2]);
    assert.equal(tensors.get('a.bias')!.dtype, 'BF16');
    assert.deepEqual([...tensorToFloat32(tensors.get('a.bias')!)], [0.5, -0.5]);
  });
});

describe('writing .pth files', () => {
  it('reads back what it writes, byte for byte, and writes the committed fixture exactly', async () => {
    const tensors = writerFixtureTensors();
    const path = join(folder, 'written-by-drama3.pth');
    await writeTorchCheckpoint(path, tensors);
    const back = await readTorchCheckpoint(path);
    assert.deepEqual([...back.keys()], [...tensors.keys()]);
    for (const [name, tensor] of tensors) {
      assert.equal(back.get(name)!.dtype, tensor.dtype, name);
      assert.deepEqual(back.get(name)!.shape, tensor.shape, name);
      assert.equal(hexOf(back.get(name)!.data), hexOf(tensor.data), name);
    }
    assert.ok((await readFile(path)).equals(await readFile(fixture('written-by-drama3.pth'))));
  });

  it('uses only globals and opcodes that torch.save itself wrote in a file torch.load(weights_only) accepted', async () => {
    const inventory = async (path: string) => {
      const zip = await ZipReader.open(path);
      const pickleName = zip.names().find((name) => name.endsWith('/data.pkl'))!;
      const { globals } = torchUnpickling(path);
      const instructions = scanPickle(await zip.readWhole(pickleName, 1 << 20), {
        allowedGlobals: globals,
        source: path,
      });
      await zip.close();
      return {
        globals: new Set(instructions.filter((i) => i.opcode === 0x63).map((i) => String(i.argument))),
        opcodes: new Set(instructions.map((i) => i.opcode)),
      };
    };
    const ours = await inventory(fixture('written-by-drama3.pth'));
    const torchs = await inventory(fixture('torch-save.pth'));
    // The fixture has no int32 or uint8 tensor; their storage classes are in torch's weights_only allow-list too.
    const sameKindAsFixture = new Set(['torch.IntStorage', 'torch.ByteStorage']);
    for (const name of ours.globals) {
      assert.ok(torchs.globals.has(name) || sameKindAsFixture.has(name), `torch.save never writes ${name}`);
    }
    for (const opcode of ours.opcodes)
      assert.ok(torchs.opcodes.has(opcode), `torch.save never writes 0x${opcode.toString(16)}`);
  });

  it('refuses a tensor whose bytes do not match its shape, leaving no file', async () => {
    const broken = new Map([['w', { dtype: 'F32', shape: [4], data: new Uint8Array(12) } as HostTensor]]);
    await assert.rejects(writeTorchCheckpoint(join(folder, 'x.pth'), broken), refused('TENSOR_SIZE_MISMATCH'));
    assert.deepEqual(
      (await readdir(folder)).filter((name) => name.startsWith('x.pth')),
      [],
    );
  });
});

describe('refusing bad .pth files', () => {
  const good = (): Promise<string> => {
    const path = join(folder, `good-${Math.random().toString(36).slice(2)}.pth`);
    return writeTorchCheckpoint(path, writerFixtureTensors()).then(() => path);
  };

  it('refuses a malicious pickle inside the zip before building anything', async () => {
    const pickle = [0x80, 2, ...Buffer.from('cbuiltins\neval\nX\x04\x00\x00\x00evil\x85R.', 'latin1')];
    const path = await handMade('eval.pth', Uint8Array.from(pickle), new Uint8Array(0));
    await assert.rejects(readTorchCheckpoint(path), refused('PICKLE_GLOBAL_REFUSED', 'builtins.eval'));
  });

  it('refuses a file that is not a zip, and the legacy pickle-stream format', async () => {
    const junk = join(folder, 'junk.pth');
    await writeFile(junk, 'not a zip at all, just text that goes on long enough');
    await assert.rejects(readTorchCheckpoint(junk), refused('ZIP_BAD_ARCHIVE'));
    const legacy = join(folder, 'legacy.pth');
    await writeFile(legacy, Uint8Array.from([0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8]));
    await assert.rejects(readTorchCheckpoint(legacy), refused('TORCH_LEGACY_FORMAT'));
  });

  it('refuses a missing or short storage entry and a big-endian file', async () => {
    const source = await good();
    const missing = join(folder, 'missing.pth');
    await rezip(source, missing, (name, bytes) => (name === 'archive/data/0' ? undefined : bytes));
    await assert.rejects(readTorchCheckpoint(missing), refused('TORCH_STORAGE_MISSING', 'archive/data/0'));
    const short = join(folder, 'short.pth');
    await rezip(source, short, (name, bytes) => (name === 'archive/data/0' ? bytes.subarray(4) : bytes));
    await assert.rejects(readTorchCheckpoint(short), refused('TORCH_STORAGE_SIZE_MISMATCH'));
    const big = join(folder, 'big.pth');
    await rezip(source, big, (name, bytes) => (name === 'archive/byteorder' ? new TextEncoder().encode('big') : bytes));
    await assert.rejects(readTorchCheckpoint(big), refused('TORCH_BIG_ENDIAN'));
    const nameless = join(folder, 'nameless.pth');
    await rezip(source, nameless, (name, bytes) => (name === 'archive/data.pkl' ? undefined : bytes));
    await assert.rejects(readTorchCheckpoint(nameless), refused('TORCH_NO_PICKLE'));
  });

  it('inflates a deflated pickle but refuses a deflated storage, which cannot be read in place', async () => {
    // deflated.pth: written-by-drama3.pth re-zipped by Python's zipfile with ZIP_DEFLATED on every entry.
    await assert.rejects(
      readTorchCheckpoint(fixture('deflated.pth')),
      refused('ZIP_ENTRY_COMPRESSED', 'archive/data/0'),
    );
  });

  it('refuses a view that reaches past its storage, and dtypes we cannot hold', async () => {
    const past = await handMade('past.pth', tensorPickle('FloatStorage', 4, 2, [3], [1]), new Uint8Array(16));
    await assert.rejects(readTorchCheckpoint(past), refused('TORCH_VIEW_OUT_OF_RANGE', 'byte 20'));
    const double = await handMade('double.pth', tensorPickle('DoubleStorage', 1, 0, [1], [1]), new Uint8Array(8));
    await assert.rejects(readTorchCheckpoint(double), refused('TORCH_UNSUPPORTED_DTYPE', 'torch.DoubleStorage'));
  });

  it('gathers a strided view that is not a plain transpose', async () => {
    // Storage 0..11 as f32; view offset 1, size [2, 3], stride [6, 2] → 1 3 5 / 7 9 11.
    const storage = float32ToTensor(
      Float32Array.from({ length: 12 }, (_, i) => i),
      'F32',
      [12],
    ).data;
    const path = await handMade('strided.pth', tensorPickle('FloatStorage', 12, 1, [2, 3], [6, 2]), storage);
    const tensor = (await readTorchCheckpoint(path)).get('w')!;
    assert.deepEqual(tensor.shape, [2, 3]);
    assert.deepEqual([...tensorToFloat32(tensor)], [1, 3, 5, 7, 9, 11]);
    assert.deepEqual(tensor, makeTensor('F32', [2, 3], tensor.data));
  });
});
