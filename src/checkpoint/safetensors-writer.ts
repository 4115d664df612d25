// Writes safetensors files: one file, or shards `model-0000N-of-0000M.safetensors` plus
// `model.safetensors.index.json`. Every file is written under a temporary name and renamed into place only when
// complete; on failure every file of this write is removed, so nothing half-written is left behind.
// Sharding is greedy in input order: a shard closes before the tensor that would take it past maxShardBytes
// (a single larger tensor gets a shard of its own). `tensors` may be a lazy generator, sync or async: a closed shard
// is written while the next one is gathered, so at most two shards' tensors are held at a time.
import { randomBytes } from 'node:crypto';
import { type FileHandle, mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { DramaError } from '../errors.ts';
import { buildHeader } from './safetensors-format.ts';
import { INDEX_FILE_NAME } from './safetensors-reader.ts';
import { type HostTensor, makeTensor } from './tensor.ts';

const MAX_WRITE_BYTES = 1 << 30; // fs writes cap near 2 GiB per call

function temporaryName(path: string): string {
  return join(dirname(path), `.${basename(path)}.partial-${process.pid}-${randomBytes(4).toString('hex')}`);
}

async function writeAll(handle: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.byteLength) {
    const length = Math.min(MAX_WRITE_BYTES, bytes.byteLength - done);
    const { bytesWritten } = await handle.write(bytes, done, length, position + done);
    done += bytesWritten;
  }
}

/** Writes one complete safetensors file at `path` (which must not exist yet) and syncs it. */
async function writeFileContents(
  path: string,
  tensors: readonly [string, HostTensor][],
  metadata: Record<string, string> | undefined,
  onTensorWritten: (bytes: number) => void,
): Promise<void> {
  const { bytes: header, offsets } = buildHeader(
    tensors.map(([name, t]) => ({ name, dtype: t.dtype, shape: t.shape, byteLength: t.data.byteLength })),
    metadata,
  );
  const handle = await open(path, 'wx');
  try {
    await writeAll(handle, header, 0);
    for (const [index, [, tensor]] of tensors.entries()) {
      await writeAll(handle, tensor.data, header.byteLength + offsets[index]!);
      onTensorWritten(tensor.data.byteLength);
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Checks sizes and refuses a repeated name. */
function checked(name: string, tensor: HostTensor, seen: Set<string>): [string, HostTensor] {
  if (seen.has(name)) {
    throw new DramaError('SAFETENSORS_DUPLICATE_TENSOR', `tensor ${name} is given twice`, {
      kind: 'internal',
      param: name,
    });
  }
  seen.add(name);
  return [name, makeTensor(tensor.dtype, tensor.shape, tensor.data)];
}

export async function writeSafetensors(
  path: string,
  tensors: Iterable<[string, HostTensor]>,
  metadata?: Record<string, string>,
): Promise<void> {
  const seen = new Set<string>();
  const list = [...tensors].map(([name, tensor]) => checked(name, tensor, seen));
  const temporary = temporaryName(path);
  try {
    await writeFileContents(temporary, list, metadata, () => undefined);
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

export function shardFileName(index: number, count: number): string {
  return `model-${String(index + 1).padStart(5, '0')}-of-${String(count).padStart(5, '0')}.safetensors`;
}

export async function writeShardedSafetensors(
  dir: string,
  tensors: Iterable<[string, HostTensor]> | AsyncIterable<[string, HostTensor]>,
  options: {
    maxShardBytes: number;
    metadata?: Record<string, string>;
    onProgress?: (bytesWritten: number, totalBytes: number) => void;
    /** The total for onProgress when `tensors` is lazy; arrays are summed up front, else the bytes seen so far. */
    totalBytes?: number;
  },
): Promise<{ files: string[] }> {
  if (!(options.maxShardBytes > 0)) {
    throw new DramaError('SAFETENSORS_BAD_SHARD_SIZE', `maxShardBytes must be positive, got ${options.maxShardBytes}`, {
      kind: 'internal',
      param: 'maxShardBytes',
    });
  }
  await mkdir(dir, { recursive: true });
  const knownTotal =
    options.totalBytes ??
    (Array.isArray(tensors) ? tensors.reduce((sum, [, t]) => sum + t.data.byteLength, 0) : undefined);
  let bytesSeen = 0;
  let bytesWritten = 0;
  const report = (bytes: number): void => {
    bytesWritten += bytes;
    options.onProgress?.(bytesWritten, knownTotal ?? bytesSeen);
  };

  const temporaries: string[] = [];
  const shardNames: string[][] = [];
  const finals: string[] = [];
  const seen = new Set<string>();
  let pending: [string, HostTensor][] = [];
  let pendingBytes = 0;
  // The shard being written while the next is gathered; its failure surfaces at the next flush or the end.
  let writing: Promise<void> = Promise.resolve();
  const flush = async (): Promise<void> => {
    await writing;
    const temporary = temporaryName(join(dir, `shard-${shardNames.length}`));
    temporaries.push(temporary);
    shardNames.push(pending.map(([name]) => name));
    writing = writeFileContents(temporary, pending, options.metadata, report);
    writing.catch(() => undefined);
    pending = [];
    pendingBytes = 0;
  };
  try {
    for await (const [name, tensor] of tensors) {
      const entry = checked(name, tensor, seen);
      if (pending.length > 0 && pendingBytes + tensor.data.byteLength > options.maxShardBytes) await flush();
      pending.push(entry);
      pendingBytes += tensor.data.byteLength;
      bytesSeen += tensor.data.byteLength;
    }
    if (pending.length > 0 || shardNames.length === 0) await flush();
    await writing;

    const count = shardNames.length;
    const weightMap: Record<string, string> = {};
    shardNames.forEach((names, index) => {
      for (const name of names) weightMap[name] = shardFileName(index, count);
    });
    const index = { metadata: { total_size: bytesSeen }, weight_map: weightMap };
    const indexTemporary = temporaryName(join(dir, INDEX_FILE_NAME));
    temporaries.push(indexTemporary);
    const handle = await open(indexTemporary, 'wx');
    try {
      await handle.writeFile(`${JSON.stringify(index, null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    for (const [shard, temporary] of temporaries.slice(0, count).entries()) {
      const final = join(dir, shardFileName(shard, count));
      await rename(temporary, final);
      finals.push(final);
    }
    // The index goes last: a reader that finds it finds every shard it names.
    await rename(indexTemporary, join(dir, INDEX_FILE_NAME));
    return { files: [...finals, join(dir, INDEX_FILE_NAME)] };
  } catch (error) {
    // A shard still being written would recreate its file after the removal.
    await writing.catch(() => undefined);
    await Promise.all([...temporaries, ...finals].map((path) => rm(path, { force: true })));
    throw error;
  }
}
