// Opens one safetensors file or a sharded checkpoint (model.safetensors.index.json + shards) and reads tensors by
// name with range reads of exactly their bytes: no view over a whole shard is ever built (Buffer caps at 4 GiB).
// Only the headers are read at open; every shard stays open until close().
import { type FileHandle, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { DramaError } from '../errors.ts';
import { firstDuplicateKey } from './json-keys.ts';
import { type MissingFile, openRegularFile, readRegularText } from './regular-file.ts';
import { HEADER_LENGTH_BYTES, parseHeader, parseHeaderLength, type SafetensorsEntry } from './safetensors-format.ts';
import { type DType, type HostTensor, makeTensor, readFileRange } from './tensor.ts';

export const INDEX_FILE_NAME = 'model.safetensors.index.json';
const SINGLE_FILE_NAME = 'model.safetensors';

interface Shard {
  readonly path: string;
  readonly handle: FileHandle;
}

function refuse(
  code: string,
  path: string,
  message: string,
  kind: 'bad_checkpoint' | 'not_found' = 'bad_checkpoint',
): never {
  throw new DramaError(code, `${path}: ${message}`, { kind, param: path });
}

const missingFile: MissingFile = (path, reason) =>
  new DramaError('SAFETENSORS_FILE_NOT_FOUND', `${path}: cannot open (${reason})`, { kind: 'not_found', param: path });

async function openShard(
  path: string,
): Promise<{ shard: Shard; entries: Map<string, SafetensorsEntry>; metadata: Record<string, string> }> {
  const handle = await openRegularFile(path, missingFile);
  try {
    const { size } = await handle.stat();
    const prefix = new Uint8Array(Math.min(HEADER_LENGTH_BYTES, size));
    await readFileRange(handle, prefix, 0, path);
    const headerLength = parseHeaderLength(prefix, size, path);
    const json = new Uint8Array(headerLength);
    await readFileRange(handle, json, HEADER_LENGTH_BYTES, path);
    const { entries, metadata } = parseHeader(json, size, path);
    return { shard: { path, handle }, entries, metadata };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** An index's weight_map (tensor name → shard file name in the same folder), after checking its shape. */
async function readIndex(indexPath: string): Promise<Map<string, string>> {
  const text = await readRegularText(indexPath, missingFile, (path, reason) =>
    refuse('SAFETENSORS_INDEX_BAD_JSON', path, reason),
  );
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    refuse('SAFETENSORS_INDEX_BAD_JSON', indexPath, `not valid JSON (${(error as Error).message})`);
  }
  const weightMap = (parsed as { weight_map?: unknown } | null)?.weight_map;
  if (typeof weightMap !== 'object' || weightMap === null || Array.isArray(weightMap)) {
    refuse('SAFETENSORS_INDEX_BAD_JSON', indexPath, 'has no weight_map object');
  }
  const repeated = firstDuplicateKey(text);
  if (repeated !== undefined) refuse('SAFETENSORS_INDEX_BAD_JSON', indexPath, `gives ${repeated} more than once`);
  if (Object.keys(weightMap as object).length === 0) {
    refuse('SAFETENSORS_INDEX_EMPTY', indexPath, 'has an empty weight_map: it names no tensor');
  }
  const fileOf = new Map<string, string>();
  for (const [name, file] of Object.entries(weightMap as Record<string, unknown>)) {
    if (typeof file !== 'string' || file.includes('/') || file.includes('\\') || file.startsWith('.')) {
      refuse('SAFETENSORS_INDEX_BAD_JSON', indexPath, `weight_map.${name} is not a shard file name in the same folder`);
    }
    fileOf.set(name, file as string);
  }
  return fileOf;
}

export class SafetensorsCheckpoint {
  private constructor(
    private readonly entries: Map<string, SafetensorsEntry & { shard: Shard }>,
    private readonly shards: Shard[],
    /** The __metadata__ of the first shard. */
    readonly metadata: Record<string, string>,
  ) {}

  /** A `.safetensors` file, an index JSON, or a folder holding `model.safetensors.index.json` or `model.safetensors`. */
  static async open(pathOrDir: string): Promise<SafetensorsCheckpoint> {
    const path = resolve(pathOrDir);
    let isDirectory: boolean;
    try {
      isDirectory = (await stat(path)).isDirectory();
    } catch {
      refuse('SAFETENSORS_FILE_NOT_FOUND', path, 'no such file or folder', 'not_found');
    }
    if (isDirectory) {
      const index = join(path, INDEX_FILE_NAME);
      const hasIndex = await stat(index).then(
        () => true,
        () => false,
      );
      return hasIndex
        ? SafetensorsCheckpoint.openSharded(index)
        : SafetensorsCheckpoint.openFiles([join(path, SINGLE_FILE_NAME)]);
    }
    if (path.endsWith('.json')) return SafetensorsCheckpoint.openSharded(path);
    return SafetensorsCheckpoint.openFiles([path]);
  }

  private static async openSharded(indexPath: string): Promise<SafetensorsCheckpoint> {
    const fileOf = await readIndex(indexPath);
    const folder = dirname(indexPath);
    const files = [...new Set(fileOf.values())].map((file) => join(folder, file));
    const checkpoint = await SafetensorsCheckpoint.openFiles(files);
    for (const [name, file] of fileOf) {
      const entry = checkpoint.entries.get(name);
      if (entry === undefined || basename(entry.shard.path) !== file) {
        await checkpoint.close();
        refuse(
          'SAFETENSORS_INDEX_MISSING_TENSOR',
          indexPath,
          `weight_map puts ${name} in ${file}, whose header lacks it`,
        );
      }
    }
    return checkpoint;
  }

  private static async openFiles(paths: readonly string[]): Promise<SafetensorsCheckpoint> {
    const shards: Shard[] = [];
    const entries = new Map<string, SafetensorsEntry & { shard: Shard }>();
    let metadata: Record<string, string> | undefined;
    try {
      for (const path of paths) {
        const opened = await openShard(path);
        shards.push(opened.shard);
        metadata ??= opened.metadata;
        for (const [name, entry] of opened.entries) {
          const previous = entries.get(name);
          if (previous !== undefined) {
            refuse('SAFETENSORS_DUPLICATE_TENSOR', path, `tensor ${name} is also in ${previous.shard.path}`);
          }
          // The header's entry itself gains its shard: one object a tensor, not a copy of each.
          entries.set(name, Object.assign(entry, { shard: opened.shard }));
        }
      }
    } catch (error) {
      await Promise.all(shards.map((shard) => shard.handle.close()));
      throw error;
    }
    return new SafetensorsCheckpoint(entries, shards, metadata ?? {});
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  info(name: string): { dtype: DType; shape: number[]; file: string; fileOffset: number; byteLength: number } {
    const entry = this.require(name);
    return {
      dtype: entry.dtype,
      shape: [...entry.shape],
      file: entry.shard.path,
      fileOffset: entry.fileOffset,
      byteLength: entry.byteLength,
    };
  }

  /** Reads just this tensor's bytes. */
  async read(name: string): Promise<HostTensor> {
    const entry = this.require(name);
    const data = new Uint8Array(entry.byteLength);
    await readFileRange(entry.shard.handle, data, entry.fileOffset, entry.shard.path);
    return makeTensor(entry.dtype, entry.shape, data);
  }

  /** Reads `target.byteLength` bytes of a tensor, starting `byteOffset` bytes in (e.g. one expert's rows). */
  async readInto(name: string, target: Uint8Array, byteOffset = 0): Promise<void> {
    const entry = this.require(name);
    if (byteOffset < 0 || byteOffset + target.byteLength > entry.byteLength) {
      throw new DramaError(
        'SAFETENSORS_RANGE_OUT_OF_TENSOR',
        `bytes [${byteOffset}, ${byteOffset + target.byteLength}) lie outside tensor ${name} of ${entry.byteLength} bytes`,
        { kind: 'internal', param: name },
      );
    }
    await readFileRange(entry.shard.handle, target, entry.fileOffset + byteOffset, entry.shard.path);
  }

  async close(): Promise<void> {
    await Promise.all(this.shards.splice(0).map((shard) => shard.handle.close()));
  }

  private require(name: string): SafetensorsEntry & { shard: Shard } {
    const entry = this.entries.get(name);
    if (entry === undefined) {
      throw new DramaError('SAFETENSORS_TENSOR_NOT_FOUND', `the checkpoint has no tensor ${name}`, {
        kind: 'bad_checkpoint',
        param: name,
      });
    }
    return entry;
  }
}
