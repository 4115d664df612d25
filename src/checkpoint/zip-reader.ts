// Reads a zip archive's directory (yauzl) and its stored entries in place: a stored entry's bytes are read straight
// from the file at its data offset, in ranges, so a multi-GiB archive never sits in one buffer.
import type { FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import yauzl from 'yauzl';
import { DramaError } from '../errors.ts';
import { openRegularFile } from './regular-file.ts';
import { readFileRange } from './tensor.ts';

export interface ZipEntryInfo {
  readonly name: string;
  /** True when the entry is stored without compression (method 0) and can be read in place. */
  readonly stored: boolean;
  readonly size: number;
}

function badArchive(path: string, message: string, cause?: unknown): DramaError {
  return new DramaError('ZIP_BAD_ARCHIVE', `${path}: ${message}`, { kind: 'bad_checkpoint', param: path, cause });
}

const STREAM_CHUNK_BYTES = 1 << 16;

/** yauzl reads the directory through the one handle the reader holds, so only a checked regular file is opened. */
class HandleReader extends yauzl.RandomAccessReader {
  constructor(private readonly handle: FileHandle) {
    super();
  }

  override _readStreamForRange(start: number, end: number): Readable {
    const handle = this.handle;
    let position = start;
    return new Readable({
      async read() {
        if (position >= end) {
          this.push(null);
          return;
        }
        const length = Math.min(STREAM_CHUNK_BYTES, end - position);
        try {
          const { bytesRead, buffer } = await handle.read(Buffer.allocUnsafe(length), 0, length, position);
          if (bytesRead === 0) throw new Error(`the file ends at byte ${position}`);
          position += bytesRead;
          this.push(buffer.subarray(0, bytesRead));
        } catch (error) {
          this.destroy(error as Error);
        }
      },
    });
  }
}

export class ZipReader {
  private readonly dataStarts = new Map<string, number>();

  private constructor(
    readonly path: string,
    private readonly zip: yauzl.ZipFile,
    private readonly handle: FileHandle,
    private readonly entries: ReadonlyMap<string, yauzl.Entry>,
  ) {}

  static async open(path: string): Promise<ZipReader> {
    const handle = await openRegularFile(path, (file, reason) => badArchive(file, `cannot open (${reason})`));
    let zip: yauzl.ZipFile;
    try {
      const { size } = await handle.stat();
      zip = await yauzl.fromRandomAccessReaderPromise(new HandleReader(handle), size, {
        lazyEntries: true,
        autoClose: false,
      });
    } catch (error) {
      await handle.close();
      throw badArchive(path, `not a readable zip archive (${(error as Error).message})`, error);
    }
    const entries = new Map<string, yauzl.Entry>();
    try {
      for await (const entry of zip.eachEntry()) entries.set(entry.fileName, entry);
    } catch (error) {
      zip.close();
      await handle.close();
      throw badArchive(path, `broken zip directory (${(error as Error).message})`, error);
    }
    return new ZipReader(path, zip, handle, entries);
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  info(name: string): ZipEntryInfo | undefined {
    const entry = this.entries.get(name);
    if (entry === undefined) return undefined;
    return { name, stored: entry.compressionMethod === 0, size: entry.uncompressedSize };
  }

  /** A whole (small) entry, decompressed if needed; refuses entries over `maxBytes`. */
  async readWhole(name: string, maxBytes: number): Promise<Uint8Array> {
    const entry = this.require(name);
    if (entry.uncompressedSize > maxBytes) {
      throw badArchive(this.path, `entry ${name} is ${entry.uncompressedSize} bytes, over the ${maxBytes} allowed`);
    }
    if (entry.compressionMethod === 0) {
      const out = new Uint8Array(entry.uncompressedSize);
      await this.readStored(name, 0, out);
      return out;
    }
    try {
      const stream = await this.zip.openReadStreamPromise(entry);
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      return new Uint8Array(Buffer.concat(chunks));
    } catch (error) {
      throw badArchive(this.path, `cannot inflate entry ${name} (${(error as Error).message})`, error);
    }
  }

  /** Fills `target` with a stored entry's bytes starting `offset` bytes into the entry. */
  async readStored(name: string, offset: number, target: Uint8Array): Promise<void> {
    const entry = this.require(name);
    if (entry.compressionMethod !== 0) {
      throw new DramaError(
        'ZIP_ENTRY_COMPRESSED',
        `${this.path}: entry ${name} is compressed; it must be stored to be read in place`,
        {
          kind: 'bad_checkpoint',
          param: this.path,
        },
      );
    }
    if (offset < 0 || offset + target.byteLength > entry.uncompressedSize) {
      throw new DramaError(
        'ZIP_RANGE_OUT_OF_ENTRY',
        `${this.path}: bytes [${offset}, ${offset + target.byteLength}) lie outside entry ${name} of ${entry.uncompressedSize} bytes`,
        { kind: 'internal', param: this.path },
      );
    }
    let start = this.dataStarts.get(name);
    if (start === undefined) {
      try {
        start = (await this.zip.readLocalFileHeaderPromise(entry, { minimal: true })).fileDataStart;
      } catch (error) {
        throw badArchive(this.path, `bad local header for entry ${name} (${(error as Error).message})`, error);
      }
      this.dataStarts.set(name, start);
    }
    await readFileRange(this.handle, target, start + offset, this.path);
  }

  async close(): Promise<void> {
    this.zip.close();
    await this.handle.close();
  }

  private require(name: string): yauzl.Entry {
    const entry = this.entries.get(name);
    if (entry === undefined) {
      throw new DramaError('ZIP_ENTRY_MISSING', `${this.path}: the archive has no entry ${name}`, {
        kind: 'bad_checkpoint',
        param: this.path,
      });
    }
    return entry;
  }
}
