// File fuzz cases for safetensors files and the sharded index: every way a header, its tensors' byte ranges, the
// index's weight map or the files themselves can be wrong.
import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { INDEX_FILE_NAME, SafetensorsCheckpoint } from '../../src/checkpoint/safetensors-reader.ts';
import { writeShardedSafetensors } from '../../src/checkpoint/safetensors-writer.ts';
import { float32ToTensor } from '../../src/checkpoint/tensor.ts';
import { type FileCase, type FileCaseGroup, fileOf, makeFifo, safetensorsBytes } from './file-case.ts';

const f32 = (count: number, begin: number) => ({
  dtype: 'F32',
  shape: [count],
  data_offsets: [begin, begin + 4 * count],
});

/** One safetensors file with this header and data. */
function single(name: string, code: string, header: unknown, data = new Uint8Array(8), length?: bigint): FileCase {
  return { name, code, build: (dir) => fileOf(dir, 'model.safetensors', safetensorsBytes(header, data, length)) };
}

/** A header with one F32 [2] tensor `w` whose record is replaced by `record`. */
const withRecord = (name: string, code: string, record: unknown) => single(name, code, { w: record });

/** A two-shard checkpoint folder (a: shard 1, b: shard 2); `edit` then breaks it; the folder is loaded. */
function sharded(name: string, code: string, edit: (dir: string, index: Record<string, unknown>) => Promise<void>) {
  return {
    name,
    code,
    build: async (dir: string) => {
      const folder = join(dir, 'checkpoint');
      await writeShardedSafetensors(
        folder,
        [
          ['a', float32ToTensor(Float32Array.from([1, 2]), 'F32', [2])],
          ['b', float32ToTensor(Float32Array.from([3, 4]), 'F32', [2])],
        ],
        { maxShardBytes: 8 },
      );
      const index = JSON.parse(await readFile(join(folder, INDEX_FILE_NAME), 'utf8')) as Record<string, unknown>;
      await edit(folder, index);
      return folder;
    },
  };
}

const SHARD_1 = 'model-00001-of-00002.safetensors';
const SHARD_2 = 'model-00002-of-00002.safetensors';
const writeIndex = (dir: string, text: unknown) =>
  writeFile(join(dir, INDEX_FILE_NAME), typeof text === 'string' ? text : JSON.stringify(text));
const weightMap = (index: Record<string, unknown>) => index.weight_map as Record<string, string>;

const headerCases: FileCase[] = [
  { name: 'empty file', code: 'SAFETENSORS_TRUNCATED', build: (dir) => fileOf(dir, 'model.safetensors', '') },
  { name: 'seven bytes', code: 'SAFETENSORS_TRUNCATED', build: (dir) => fileOf(dir, 'model.safetensors', '1234567') },
  single('header length past the end', 'SAFETENSORS_HEADER_PAST_END', { w: f32(2, 0) }, new Uint8Array(8), 4096n),
  single('header length 2^63', 'SAFETENSORS_HEADER_PAST_END', { w: f32(2, 0) }, new Uint8Array(8), 1n << 63n),
  single('header not UTF-8', 'SAFETENSORS_BAD_JSON', Uint8Array.from([0x7b, 0xff, 0xfe, 0x7d])),
  single('header not JSON', 'SAFETENSORS_BAD_JSON', '{"w": {"dtype": '),
  single('header a JSON array', 'SAFETENSORS_BAD_JSON', '[1, 2]'),
  single('header JSON null', 'SAFETENSORS_BAD_JSON', 'null'),
  single('header a JSON string', 'SAFETENSORS_BAD_JSON', '"model"'),
  withRecord('tensor record a number', 'SAFETENSORS_BAD_HEADER', 7),
  withRecord('tensor record null', 'SAFETENSORS_BAD_HEADER', null),
  withRecord('no dtype', 'SAFETENSORS_BAD_HEADER', { shape: [2], data_offsets: [0, 8] }),
  withRecord('dtype F64', 'SAFETENSORS_UNKNOWN_DTYPE', { ...f32(2, 0), dtype: 'F64' }),
  withRecord('dtype in lower case', 'SAFETENSORS_UNKNOWN_DTYPE', { ...f32(2, 0), dtype: 'f32' }),
  withRecord('dtype __proto__', 'SAFETENSORS_UNKNOWN_DTYPE', { ...f32(2, 0), dtype: '__proto__' }),
  withRecord('shape not a list', 'SAFETENSORS_BAD_HEADER', { ...f32(2, 0), shape: 2 }),
  withRecord('negative dimension', 'SAFETENSORS_BAD_HEADER', { ...f32(2, 0), shape: [-2] }),
  withRecord('fractional dimension', 'SAFETENSORS_BAD_HEADER', { ...f32(2, 0), shape: [1.5] }),
  withRecord('dimension as text', 'SAFETENSORS_BAD_HEADER', { ...f32(2, 0), shape: ['2'] }),
  withRecord('no data_offsets', 'SAFETENSORS_BAD_HEADER', { dtype: 'F32', shape: [2] }),
  withRecord('three data_offsets', 'SAFETENSORS_BAD_HEADER', { ...f32(2, 0), data_offsets: [0, 4, 8] }),
  withRecord('reversed offsets', 'SAFETENSORS_OFFSET_OUT_OF_RANGE', { ...f32(2, 0), data_offsets: [8, 0] }),
  withRecord('negative offset', 'SAFETENSORS_OFFSET_OUT_OF_RANGE', { ...f32(2, 0), data_offsets: [-8, 0] }),
  withRecord('fractional offset', 'SAFETENSORS_OFFSET_OUT_OF_RANGE', { ...f32(2, 0), data_offsets: [0.5, 8.5] }),
  withRecord('offset past 2^53', 'SAFETENSORS_OFFSET_OUT_OF_RANGE', { ...f32(2, 0), data_offsets: [0, 2 ** 60] }),
  withRecord('span not shape × dtype', 'SAFETENSORS_SIZE_MISMATCH', { ...f32(2, 0), shape: [3] }),
  withRecord('shape product past 2^53', 'SAFETENSORS_SIZE_MISMATCH', { ...f32(2, 0), shape: [2 ** 40, 2 ** 40] }),
  single('overlapping tensors', 'SAFETENSORS_OFFSETS_OVERLAP', { a: f32(2, 0), b: f32(2, 4) }, new Uint8Array(12)),
  single('two tensors on the same bytes', 'SAFETENSORS_OFFSETS_OVERLAP', { a: f32(2, 0), b: f32(2, 0) }),
  single('empty tensor inside another', 'SAFETENSORS_OFFSETS_OVERLAP', { a: f32(2, 0), z: { ...f32(0, 4) } }),
  single('gap between tensors', 'SAFETENSORS_OFFSETS_GAP', { a: f32(1, 0), b: f32(1, 8) }, new Uint8Array(12)),
  single('bytes after the last tensor', 'SAFETENSORS_TRAILING_DATA', { a: f32(1, 0) }, new Uint8Array(12)),
  single('cut short', 'SAFETENSORS_TRUNCATED', { a: f32(2, 0), b: f32(2, 8) }, new Uint8Array(12)),
  single('a stray offset past the end', 'SAFETENSORS_OFFSET_OUT_OF_RANGE', { a: f32(2, 0), b: f32(2, 64) }),
  single(
    'one name given twice',
    'SAFETENSORS_DUPLICATE_TENSOR',
    '{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}',
  ),
  single('__metadata__ not an object', 'SAFETENSORS_BAD_HEADER', { __metadata__: [1], w: f32(2, 0) }),
  single('__metadata__ value not text', 'SAFETENSORS_BAD_HEADER', { __metadata__: { step: 3 }, w: f32(2, 0) }),
  {
    name: 'model.safetensors is a folder',
    code: 'CHECKPOINT_NOT_REGULAR_FILE',
    build: async (dir) => {
      await mkdir(join(dir, 'model.safetensors'));
      return dir;
    },
  },
  {
    name: 'the file is a FIFO',
    code: 'CHECKPOINT_NOT_REGULAR_FILE',
    build: async (dir) => {
      makeFifo(join(dir, 'model.safetensors'));
      return join(dir, 'model.safetensors');
    },
  },
  { name: 'no such file', code: 'SAFETENSORS_FILE_NOT_FOUND', build: async (dir) => join(dir, 'absent.safetensors') },
  {
    name: 'a dangling symlink',
    code: 'SAFETENSORS_FILE_NOT_FOUND',
    build: async (dir) => {
      await symlink(join(dir, 'nowhere'), join(dir, 'model.safetensors'));
      return join(dir, 'model.safetensors');
    },
  },
];

const indexCases: FileCase[] = [
  sharded('index not JSON', 'SAFETENSORS_INDEX_BAD_JSON', (dir) => writeIndex(dir, '{"weight_map": {')),
  sharded('index not UTF-8', 'SAFETENSORS_INDEX_BAD_JSON', (dir) =>
    writeFile(join(dir, INDEX_FILE_NAME), Uint8Array.from([0x7b, 0xc3, 0x28, 0x7d])),
  ),
  sharded('index without weight_map', 'SAFETENSORS_INDEX_BAD_JSON', (dir) => writeIndex(dir, { metadata: {} })),
  sharded('weight_map a list', 'SAFETENSORS_INDEX_BAD_JSON', (dir) => writeIndex(dir, { weight_map: [SHARD_1] })),
  sharded('shard name a number', 'SAFETENSORS_INDEX_BAD_JSON', (dir) => writeIndex(dir, { weight_map: { a: 1 } })),
  sharded('shard outside the folder', 'SAFETENSORS_INDEX_BAD_JSON', (dir, index) =>
    writeIndex(dir, { weight_map: { ...weightMap(index), a: '../model.safetensors' } }),
  ),
  sharded('shard in a subfolder', 'SAFETENSORS_INDEX_BAD_JSON', (dir, index) =>
    writeIndex(dir, { weight_map: { ...weightMap(index), a: `sub/${SHARD_1}` } }),
  ),
  sharded('empty weight_map', 'SAFETENSORS_INDEX_EMPTY', (dir) => writeIndex(dir, { weight_map: {} })),
  sharded('index names a missing shard', 'SAFETENSORS_FILE_NOT_FOUND', (dir, index) =>
    writeIndex(dir, { weight_map: { ...weightMap(index), c: 'model-00003-of-00003.safetensors' } }),
  ),
  sharded('index puts a tensor in a shard that lacks it', 'SAFETENSORS_INDEX_MISSING_TENSOR', (dir, index) =>
    writeIndex(dir, { weight_map: { ...weightMap(index), a: SHARD_2 } }),
  ),
  sharded('one tensor in two shards', 'SAFETENSORS_DUPLICATE_TENSOR', async (dir, index) => {
    await writeFile(join(dir, 'copy.safetensors'), await readFile(join(dir, SHARD_1)));
    await writeIndex(dir, { weight_map: { ...weightMap(index), copy: 'copy.safetensors' } });
  }),
  sharded('one name given twice in the weight_map', 'SAFETENSORS_INDEX_BAD_JSON', (dir) =>
    writeIndex(dir, `{"weight_map":{"a":"${SHARD_1}","b":"${SHARD_2}","a":"${SHARD_2}"}}`),
  ),
  sharded('the index is a FIFO', 'CHECKPOINT_NOT_REGULAR_FILE', async (dir) => {
    await rm(join(dir, INDEX_FILE_NAME));
    makeFifo(join(dir, INDEX_FILE_NAME));
  }),
  sharded('a shard is a FIFO', 'CHECKPOINT_NOT_REGULAR_FILE', async (dir) => {
    await rm(join(dir, SHARD_2));
    makeFifo(join(dir, SHARD_2));
  }),
  sharded('a shard is a folder', 'CHECKPOINT_NOT_REGULAR_FILE', async (dir) => {
    await rm(join(dir, SHARD_1));
    await mkdir(join(dir, SHARD_1));
  }),
  sharded('a shard is cut short', 'SAFETENSORS_TRUNCATED', async (dir) => {
    const bytes = await readFile(join(dir, SHARD_2));
    await writeFile(join(dir, SHARD_2), bytes.subarray(0, bytes.length - 3));
  }),
];

/** Opens the checkpoint and reads every tensor, as a model load does. */
async function loadSafetensors(path: string): Promise<void> {
  const checkpoint = await SafetensorsCheckpoint.open(path);
  try {
    for (const name of checkpoint.names()) await checkpoint.read(name);
  } finally {
    await checkpoint.close();
  }
}

export const safetensorsGroup: FileCaseGroup = { kind: 'safetensors', load: loadSafetensors, cases: headerCases };
export const indexGroup: FileCaseGroup = { kind: 'index', load: loadSafetensors, cases: indexCases };
