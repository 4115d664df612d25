// File fuzz cases for torch .pth checkpoints: broken zips, broken or hostile pickles inside them, and storages that
// do not match what the pickle says.
import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PickleWriter } from '../../src/checkpoint/pickle-writer.ts';
import { float32ToTensor } from '../../src/checkpoint/tensor.ts';
import { readTorchCheckpoint, writeTorchCheckpoint } from '../../src/checkpoint/torch-pth.ts';
import { ZipReader } from '../../src/checkpoint/zip-reader.ts';
import { ZipWriter } from '../../src/checkpoint/zip-writer.ts';
import { type FileCase, type FileCaseGroup, fileOf, makeFifo } from './file-case.ts';

const PICKLE = 'archive/data.pkl';
const STORAGE = 'archive/data/0';

/** A zip of these entries at dir/codec.pth. */
async function zipOf(dir: string, entries: [string, Uint8Array][]): Promise<string> {
  const path = join(dir, 'codec.pth');
  const writer = await ZipWriter.create(path);
  for (const [name, bytes] of entries) await writer.add(name, [bytes]);
  await writer.finish();
  return path;
}

/** A one-tensor .pth (w: F32 [4]) written by our writer, then re-zipped with `edit` applied to each entry. */
async function editedPth(dir: string, edit: (name: string, bytes: Uint8Array) => Uint8Array | undefined) {
  const source = join(dir, 'source.pth');
  await writeTorchCheckpoint(source, new Map([['w', float32ToTensor(Float32Array.from([1, 2, 3, 4]), 'F32', [4])]]));
  const reader = await ZipReader.open(source);
  const entries: [string, Uint8Array][] = [];
  try {
    for (const name of reader.names()) {
      const bytes = edit(name, await reader.readWhole(name, 1 << 20));
      if (bytes !== undefined) entries.push([name, bytes]);
    }
  } finally {
    await reader.close();
  }
  await rm(source);
  return zipOf(dir, entries);
}

/** A .pth whose data.pkl is these raw bytes (plus one 16-byte storage). */
const withPickle = (name: string, code: string, pickle: number[] | Uint8Array): FileCase => ({
  name,
  code,
  build: (dir) =>
    zipOf(dir, [
      [PICKLE, Uint8Array.from(pickle)],
      [STORAGE, new Uint8Array(16)],
    ]),
});

/** One tensor `w` over storage 0 with free storage class, size, offset, shape and stride. */
function tensorPickle(storageClass: string, elements: number, offset: number, size: number[], stride: number[]) {
  const writer = new PickleWriter().global('collections', 'OrderedDict').emptyTuple().reduce().mark().string('w');
  writer.global('torch._utils', '_rebuild_tensor_v2').mark();
  writer.mark().string('storage').global('torch', storageClass).string('0').string('cpu').integer(elements);
  writer.tuple().persistentId().integer(offset).integerTuple(size).integerTuple(stride).boolean(false);
  writer.global('collections', 'OrderedDict').emptyTuple().reduce().tuple().reduce().setItems();
  return writer.finish();
}

const latin1 = (text: string) => [...Buffer.from(text, 'latin1')];

const cases: FileCase[] = [
  { name: 'empty file', code: 'ZIP_BAD_ARCHIVE', build: (dir) => fileOf(dir, 'codec.pth', '') },
  { name: 'text, not a zip', code: 'ZIP_BAD_ARCHIVE', build: (dir) => fileOf(dir, 'codec.pth', 'x'.repeat(200)) },
  {
    name: 'a legacy pickle stream',
    code: 'TORCH_LEGACY_FORMAT',
    build: (dir) => fileOf(dir, 'codec.pth', Uint8Array.from([0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46])),
  },
  {
    name: 'a zip cut in half',
    code: 'ZIP_BAD_ARCHIVE',
    build: async (dir) => {
      const path = await editedPth(dir, (_, bytes) => bytes);
      const bytes = await readFile(path);
      await writeFile(path, bytes.subarray(0, bytes.length >> 1));
      return path;
    },
  },
  {
    name: 'no data.pkl',
    code: 'TORCH_NO_PICKLE',
    build: (dir) => editedPth(dir, (name, bytes) => (name === PICKLE ? undefined : bytes)),
  },
  {
    name: 'two data.pkl under two archive names',
    code: 'TORCH_NO_PICKLE',
    build: (dir) =>
      zipOf(dir, [
        [PICKLE, new Uint8Array([0x80, 2, 0x7d, 0x2e])],
        ['other/data.pkl', new Uint8Array(4)],
      ]),
  },
  withPickle('a pickle string of invalid UTF-8', 'PICKLE_BAD_UTF8', [0x80, 2, 0x58, 2, 0, 0, 0, 0xff, 0xfe, 0x2e]),
  withPickle('a short string of invalid UTF-8', 'PICKLE_BAD_UTF8', [0x80, 2, 0x8c, 1, 0xc3, 0x2e]),
  withPickle('a GLOBAL line of invalid UTF-8', 'PICKLE_BAD_UTF8', [0x80, 2, 0x63, 0xff, 0x0a, 0x61, 0x0a, 0x2e]),
  withPickle('a pickle cut inside an opcode', 'PICKLE_TRUNCATED', [0x80, 2, 0x58, 9, 0, 0, 0, 0x61]),
  withPickle('a GLOBAL without its line end', 'PICKLE_TRUNCATED', [0x80, 2, 0x63, ...latin1('os')]),
  withPickle('a pickle calling os.system', 'PICKLE_GLOBAL_REFUSED', [0x80, 2, ...latin1('cos\nsystem\n)R.')]),
  withPickle('a pickle naming builtins.eval', 'PICKLE_GLOBAL_REFUSED', [0x80, 2, ...latin1('cbuiltins\neval\n.')]),
  withPickle('an opcode outside the state-dict set', 'PICKLE_OPCODE_REFUSED', [0x80, 2, 0x69, 0x2e]),
  withPickle('a pickle protocol 6', 'PICKLE_PROTOCOL_UNSUPPORTED', [0x80, 6, 0x7d, 0x2e]),
  withPickle('a pickle without STOP', 'PICKLE_TRUNCATED', [0x80, 2, 0x7d]),
  withPickle('a stack underflow', 'PICKLE_MALFORMED', [0x80, 2, 0x73, 0x2e]),
  withPickle('an empty memo slot', 'PICKLE_MALFORMED', [0x80, 2, 0x68, 5, 0x2e]),
  withPickle('a root that is a list', 'TORCH_NOT_STATE_DICT', [0x80, 2, 0x5d, 0x2e]),
  {
    name: 'a missing storage entry',
    code: 'TORCH_STORAGE_MISSING',
    build: (dir) => editedPth(dir, (name, bytes) => (name === STORAGE ? undefined : bytes)),
  },
  {
    name: 'a short storage entry',
    code: 'TORCH_STORAGE_SIZE_MISMATCH',
    build: (dir) => editedPth(dir, (name, bytes) => (name === STORAGE ? bytes.subarray(4) : bytes)),
  },
  {
    name: 'a big-endian byte order',
    code: 'TORCH_BIG_ENDIAN',
    build: (dir) => editedPth(dir, (name, bytes) => (name.endsWith('byteorder') ? Buffer.from('big') : bytes)),
  },
  {
    name: 'a view past its storage',
    code: 'TORCH_VIEW_OUT_OF_RANGE',
    build: (dir) =>
      zipOf(dir, [
        [PICKLE, tensorPickle('FloatStorage', 4, 2, [3], [1])],
        [STORAGE, new Uint8Array(16)],
      ]),
  },
  {
    name: 'a dtype we cannot hold',
    code: 'TORCH_UNSUPPORTED_DTYPE',
    build: (dir) =>
      zipOf(dir, [
        [PICKLE, tensorPickle('DoubleStorage', 1, 0, [1], [1])],
        [STORAGE, new Uint8Array(8)],
      ]),
  },
  {
    name: 'a compressed storage',
    code: 'ZIP_ENTRY_COMPRESSED',
    build: async (dir) => {
      const path = join(dir, 'codec.pth');
      await writeFile(path, await readFile(new URL('../fixtures/checkpoint/deflated.pth', import.meta.url)));
      return path;
    },
  },
  {
    name: 'the file is a folder',
    code: 'CHECKPOINT_NOT_REGULAR_FILE',
    build: async (dir) => {
      await mkdir(join(dir, 'codec.pth'));
      return join(dir, 'codec.pth');
    },
  },
  {
    name: 'the file is a FIFO',
    code: 'CHECKPOINT_NOT_REGULAR_FILE',
    build: async (dir) => {
      makeFifo(join(dir, 'codec.pth'));
      return join(dir, 'codec.pth');
    },
  },
  { name: 'no such file', code: 'TORCH_FILE_NOT_FOUND', build: async (dir) => join(dir, 'absent.pth') },
  {
    name: 'a dangling symlink',
    code: 'TORCH_FILE_NOT_FOUND',
    build: async (dir) => {
      await symlink(join(dir, 'nowhere'), join(dir, 'codec.pth'));
      return join(dir, 'codec.pth');
    },
  },
];

export const torchGroup: FileCaseGroup = { kind: '.pth', load: readTorchCheckpoint, cases };
