// Checkpoint paths that are not regular files (a folder, a FIFO) and contents that are not what they claim (invalid
// UTF-8 in a pickle string, tensor names given twice, byte ranges that overlap or leave gaps) are refused by name:
// no raw EISDIR or TypeError, and no open() that waits forever for a FIFO's writer.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import { mkdir, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SafetensorsCheckpoint } from '../../src/checkpoint/safetensors-reader.ts';
import { writeShardedSafetensors } from '../../src/checkpoint/safetensors-writer.ts';
import { float32ToTensor, type HostTensor } from '../../src/checkpoint/tensor.ts';
import { readTorchCheckpoint } from '../../src/checkpoint/torch-pth.ts';
import { ZipWriter } from '../../src/checkpoint/zip-writer.ts';
import { DramaError } from '../../src/errors.ts';

let folder = '';
before(async () => {
  folder = await mkdtemp(join(tmpdir(), 'drama3-special-files-'));
});
after(async () => {
  await rm(folder, { recursive: true, force: true });
});

/** Resolves with the error `work` rejects with; a FIFO's reader still blocked after 3 s is freed and reported. */
async function refusal(work: Promise<unknown>, fifo?: string): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((resolve) => {
    timer = setTimeout(() => resolve('hung'), 3000);
  });
  const outcome = await Promise.race([
    work.then(
      () => 'accepted',
      (error: unknown) => error,
    ),
    hung,
  ]);
  clearTimeout(timer);
  if (outcome === 'hung' && fifo !== undefined) {
    // A blocked open(O_RDONLY) returns once a writer opens the FIFO; without this the test file never exits.
    const writer = await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    await writer.close();
    await work.catch(() => {});
  }
  return outcome;
}

function assertCode(outcome: unknown, code: string, mention?: string): void {
  assert.ok(
    outcome instanceof DramaError,
    `expected ${code}, got ${outcome instanceof Error ? outcome.stack : outcome}`,
  );
  assert.equal(outcome.code, code, outcome.message);
  if (mention !== undefined) assert.ok(outcome.message.includes(mention), outcome.message);
}

function makeFifo(path: string): void {
  execFileSync('mkfifo', [path]);
}

const tensors = (): [string, HostTensor][] => [
  ['a', float32ToTensor(Float32Array.from([1, 2]), 'F32', [2])],
  ['b', float32ToTensor(Float32Array.from([3, 4, 5]), 'F32', [3])],
];

// Twenty tensor names: past the few keys of an object compared one by one, so a repeat is found by counting them.
const LARGE_NAMES = Array.from({ length: 20 }, (_, i) => `t${i}`);

/** A safetensors file from raw header text and data bytes. */
async function rawFile(name: string, header: string, data: Uint8Array): Promise<string> {
  const json = Buffer.from(header);
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(json.byteLength));
  const path = join(folder, name);
  await writeFile(path, Buffer.concat([prefix, json, data]));
  return path;
}

describe('special files', () => {
  it('refuses a shard that is a folder', async () => {
    const dir = join(folder, 'folder-shard');
    await mkdir(join(dir, 'model.safetensors'), { recursive: true });
    assertCode(await refusal(SafetensorsCheckpoint.open(dir)), 'CHECKPOINT_NOT_REGULAR_FILE', 'a folder');
  });

  it('refuses a shard that is a FIFO without waiting for a writer', async () => {
    const dir = join(folder, 'fifo-shard');
    await writeShardedSafetensors(dir, tensors(), { maxShardBytes: 8 });
    const shard = join(dir, 'model-00002-of-00002.safetensors');
    await rm(shard);
    makeFifo(shard);
    assertCode(await refusal(SafetensorsCheckpoint.open(dir), shard), 'CHECKPOINT_NOT_REGULAR_FILE', 'a FIFO');
  });

  it('refuses an index and a .pth that are FIFOs', async () => {
    const index = join(folder, 'fifo.index.json');
    makeFifo(index);
    assertCode(await refusal(SafetensorsCheckpoint.open(index), index), 'CHECKPOINT_NOT_REGULAR_FILE', 'a FIFO');
    const pth = join(folder, 'fifo.pth');
    makeFifo(pth);
    assertCode(await refusal(readTorchCheckpoint(pth), pth), 'CHECKPOINT_NOT_REGULAR_FILE', 'a FIFO');
  });

  it('refuses a .pth that is a folder', async () => {
    const pth = join(folder, 'folder.pth');
    await mkdir(pth);
    assertCode(await refusal(readTorchCheckpoint(pth)), 'CHECKPOINT_NOT_REGULAR_FILE', 'a folder');
  });
});

describe('contents that are not what they claim', () => {
  it('refuses a pickle string of invalid UTF-8', async () => {
    const path = join(folder, 'bad-utf8.pth');
    const zip = await ZipWriter.create(path);
    // PROTO 2, BINUNICODE of 2 bytes (0xff 0xfe: not UTF-8), STOP.
    await zip.add('archive/data.pkl', [Uint8Array.from([0x80, 0x02, 0x58, 2, 0, 0, 0, 0xff, 0xfe, 0x2e])]);
    await zip.finish();
    assertCode(await refusal(readTorchCheckpoint(path)), 'PICKLE_BAD_UTF8', 'byte 2');
  });

  it('refuses a header that names one tensor twice', async () => {
    const entry = '{"dtype":"F32","shape":[2],"data_offsets":[0,8]}';
    const path = await rawFile('twice.safetensors', `{"a":${entry},"a":${entry}}`, new Uint8Array(8));
    assertCode(await refusal(SafetensorsCheckpoint.open(path)), 'SAFETENSORS_DUPLICATE_TENSOR', 'a');
  });

  it('refuses an index that names one tensor twice', async () => {
    const dir = join(folder, 'index-twice');
    await writeShardedSafetensors(dir, tensors(), { maxShardBytes: 8 });
    const text = '{"weight_map":{"a":"model-00001-of-00002.safetensors","a":"model-00002-of-00002.safetensors"}}';
    await writeFile(join(dir, 'model.safetensors.index.json'), text);
    assertCode(await refusal(SafetensorsCheckpoint.open(dir)), 'SAFETENSORS_INDEX_BAD_JSON', 'weight_map.a');
  });

  it('refuses a large header that names one tensor twice, the second time escaped', async () => {
    const record = (i: number) => `{"dtype":"F32","shape":[1],"data_offsets":[${4 * i},${4 * i + 4}]}`;
    const members = LARGE_NAMES.map((name, i) => `"${name}":${record(i)}`);
    // The repeat gives t17 its own bytes again: kept silently, the file would read as whole.
    const path = await rawFile(
      'large-twice.safetensors',
      `{${[...members, `"t1\\u0037":${record(17)}`].join(',')}}`,
      new Uint8Array(80),
    );
    assertCode(await refusal(SafetensorsCheckpoint.open(path)), 'SAFETENSORS_DUPLICATE_TENSOR', 't17');
  });

  it('refuses a large index that names one tensor twice, the second time escaped', async () => {
    const dir = join(folder, 'large-index-twice');
    const tensors = LARGE_NAMES.map((name, i): [string, HostTensor] => [
      name,
      float32ToTensor(Float32Array.of(i), 'F32', [1]),
    ]);
    await writeShardedSafetensors(dir, tensors, { maxShardBytes: 40 });
    const indexPath = join(dir, 'model.safetensors.index.json');
    const { weight_map: files } = JSON.parse(await readFile(indexPath, 'utf8')) as {
      weight_map: Record<string, string>;
    };
    const members = Object.entries(files).map(([name, file]) => `"${name}":"${file}"`);
    // The repeat puts t17 in its own shard again: kept silently, the index would read as whole.
    await writeFile(indexPath, `{"weight_map":{${[...members, `"t1\\u0037":"${files.t17}"`].join(',')}}}`);
    assertCode(await refusal(SafetensorsCheckpoint.open(dir)), 'SAFETENSORS_INDEX_BAD_JSON', 'weight_map.t17');
  });

  it('refuses an empty tensor placed inside another tensor, naming both', async () => {
    const header = JSON.stringify({
      a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
      z: { dtype: 'F32', shape: [0], data_offsets: [4, 4] },
    });
    const path = await rawFile('inside.safetensors', header, new Uint8Array(8));
    assertCode(await refusal(SafetensorsCheckpoint.open(path)), 'SAFETENSORS_OFFSETS_OVERLAP', 'a and z');
  });

  it('refuses a gap between tensors and data after the last one', async () => {
    const gap = JSON.stringify({
      a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] },
      b: { dtype: 'F32', shape: [1], data_offsets: [8, 12] },
    });
    const gapped = await rawFile('gap.safetensors', gap, new Uint8Array(12));
    assertCode(await refusal(SafetensorsCheckpoint.open(gapped)), 'SAFETENSORS_OFFSETS_GAP', 'a and b');
    const trailing = JSON.stringify({ a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } });
    const long = await rawFile('trailing.safetensors', trailing, new Uint8Array(12));
    assertCode(await refusal(SafetensorsCheckpoint.open(long)), 'SAFETENSORS_TRAILING_DATA', '8 bytes');
  });

  it('still reads a well-formed file whose tensors are not aligned to their element size', async () => {
    const header = JSON.stringify({
      odd: { dtype: 'U8', shape: [3], data_offsets: [0, 3] },
      after: { dtype: 'F32', shape: [1], data_offsets: [3, 7] },
    });
    const data = new Uint8Array(7);
    data.set([1, 2, 3]);
    new DataView(data.buffer).setFloat32(3, 0.5, true);
    const path = await rawFile('unaligned.safetensors', header, data);
    const checkpoint = await SafetensorsCheckpoint.open(path);
    try {
      const after = await checkpoint.read('after');
      assert.equal(new DataView(after.data.buffer).getFloat32(0, true), 0.5);
    } finally {
      await checkpoint.close();
    }
  });
});
