// Opens one safetensors file or a sharded checkpoint (model.safetensors.index.json + shards) and reads tensors by
// name with range reads of exactly their bytes: no view over a whole shard is ever built (Buffer caps at 4 GiB).
// Only the headers are read at open; every shard stays open until close().
import { type FileHandle, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { DramaError } from '../errors.ts';
import { firstDuplicateKey } from './json-keys.ts';
import { type MissingFile, openRegularFile, readRegularText } from './regular-file.ts';
import {
  HEADER_LENGTH_BYTES,
  parseHeader,
  parseHeaderLength,
  type SafetensorsEntry,
  type SafetensorsHeader,
} from './safetensors-format.ts';
import { type DType, type HostTensor, makeTensor, readFileRange } from './tensor.ts';

export const INDEX_FILE_NAME = 'model.safetensors.index.json';
const SINGLE_FILE_NAME = 'model.safetensors';

interface Shard {
  readonly path: string;
  /** The path's last part, taken once: the index names every tensor's shard by it. */
  readonly fileName: string;
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

async function openShard(path: string): Promise<{ shard: Shard; header: SafetensorsHeader }> {
  const handle = await openRegularFile(path, missingFile);
  try {
    const { size } = await handle.stat();
    const prefix = new Uint8Array(Math.min(HEADER_LENGTH_BYTES, size));
    await readFileRange(handle, prefix, 0, path);
    const headerLength = parseHeaderLength(prefix, size, path);
    const json = new Uint8Array(headerLength);
    await readFileRange(handle, json, HEADER_LENGTH_BYTES, path);
    const header = parseHeader(json, size, path);
    return { shard: { path, fileName: basename(path), handle }, header };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** An index's weight_map: the tensor names, the shard file (in the same folder) of each name at the same place, and
 *  the shard files in the order the map first names them. */
interface IndexMap {
  readonly names: readonly string[];
  readonly fileOf: readonly string[];
  readonly files: readonly string[];
}

/** An index's weight_map, after checking its shape. */
async function readIndex(indexPath: string): Promise<IndexMap> {
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
  const repeated = firstDuplicateKey(text, parsed);
  if (repeated !== undefined) refuse('SAFETENSORS_INDEX_BAD_JSON', indexPath, `gives ${repeated} more than once`);
  const names = Object.keys(weightMap as object);
  if (names.length === 0) refuse('SAFETENSORS_INDEX_EMPTY', indexPath, 'has an empty weight_map: it names no tensor');
  const fileOf: string[] = [];
  const files = new Set<string>();
  let previous: unknown;
  // Keys then lookups: entries() would build a [name, file] pair for each of tens of thousands of tensors.
  for (const name of names) {
    const file = (weightMap as Record<string, unknown>)[name];
    if (typeof file !== 'string' || file.includes('/') || file.includes('\\') || file.startsWith('.')) {
      refuse('SAFETENSORS_INDEX_BAD_JSON', indexPath, `weight_map.${name} is not a shard file name in the same folder`);
    }
    fileOf.push(file as string);
    // Neighbours mostly share a shard: only a change of file is looked up.
    if (file !== previous) files.add(file as string);
    previous = file;
  }
  return { names, fileOf, files: [...files] };
}

export class SafetensorsCheckpoint {
  /** Each open shard by its path (the file its entries name). */
  private readonly shardByPath: ReadonlyMap<string, Shard>;

  private constructor(
    private readonly entries: Map<string, SafetensorsEntry>,
    private readonly shards: Shard[],
    /** The __metadata__ of the first shard. */
    readonly metadata: Record<string, string>,
  ) {
    this.shardByPath = new Map(shards.map((shard) => [shard.path, shard]));
  }

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
    const { names, fileOf, files } = await readIndex(indexPath);
    const folder = dirname(indexPath);
    const checkpoint = await SafetensorsCheckpoint.openFiles(files.map((file) => join(folder, file)));
    for (let index = 0; index < names.length; index++) {
      const entry = checkpoint.entries.get(names[index]!);
      if (entry === undefined || checkpoint.shardOf(entry).fileName !== fileOf[index]) {
        await checkpoint.close();
        refuse(
          'SAFETENSORS_INDEX_MISSING_TENSOR',
          indexPath,
          `weight_map puts ${names[index]} in ${fileOf[index]}, whose header lacks it`,
        );
      }
    }
    return checkpoint;
  }

  private static async openFiles(paths: readonly string[]): Promise<SafetensorsCheckpoint> {
    const shards: Shard[] = [];
    const entries = new Map<string, SafetensorsEntry>();
    let metadata: Record<string, string> | undefined;
    try {
      for (const path of paths) {
        const { shard, header } = await openShard(path);
        shards.push(shard);
        metadata ??= header.metadata;
        for (const entry of header.entries) {
          const previous = entries.get(entry.name);
          if (previous !== undefined) {
            refuse('SAFETENSORS_DUPLICATE_TENSOR', path, `tensor ${entry.name} is also in ${previous.file}`);
          }
          entries.set(entry.name, entry);
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

  /** Every tensor's dtype and shape by name, the checkpoint's own entries rather than copies: only for reading. */
  infos(): ReadonlyMap<string, { readonly dtype: DType; readonly shape: readonly number[] }> {
    return this.entries;
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  info(name: string): { dtype: DType; shape: number[]; file: string; fileOffset: number; byteLength: number } {
    const entry = this.require(name);
    return {
      dtype: entry.dtype,
      shape: [...entry.shape],
      file: entry.file,
      fileOffset: entry.fileOffset,
      byteLength: entry.byteLength,
    };
  }

  /** Reads just this tensor's bytes. */
  async read(name: string): Promise<HostTensor> {
    const entry = this.require(name);
    const data = new Uint8Array(entry.byteLength);
    await readFileRange(this.shardOf(entry).handle, data, entry.fileOffset, entry.file);
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
    await readFileRange(this.shardOf(entry).handle, target, entry.fileOffset + byteOffset, entry.file);
  }

  async close(): Promise<void> {
    await Promise.all(this.shards.splice(0).map((shard) => shard.handle.close()));
  }

  private shardOf(entry: SafetensorsEntry): Shard {
    return this.shardByPath.get(entry.file)!;
  }

  private require(name: string): SafetensorsEntry {
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
