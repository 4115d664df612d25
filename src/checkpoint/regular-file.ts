// Opens checkpoint files for reading, refusing by name anything that is not a regular file: a folder fails mid-read
// (EISDIR) and a FIFO blocks open() until a writer appears, which would hang a load forever. The type is checked
// before opening, the open is non-blocking (a path swapped for a FIFO in between cannot hang it), and the opened
// descriptor is checked again.
import { constants, type Dirent, type Stats } from 'node:fs';
import { type FileHandle, open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DramaError } from '../errors.ts';

/** Names a checkpoint loader reads as files (config, index, tokenizer, shards, codec). */
const READ_AS_FILE = /\.(json|safetensors|pth)$/;

function describe(info: Stats): string {
  if (info.isDirectory()) return 'a folder';
  if (info.isFIFO()) return 'a FIFO';
  if (info.isSocket()) return 'a socket';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

function notRegular(path: string, info: Stats): DramaError {
  return new DramaError('CHECKPOINT_NOT_REGULAR_FILE', `${path}: is ${describe(info)}, not a regular file`, {
    kind: 'bad_checkpoint',
    param: path,
  });
}

/** How an open that cannot find or read the file is refused (each format keeps its own code). */
export type MissingFile = (path: string, reason: string) => DramaError;

function reasonOf(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
}

/** A read handle on `path`, which must be a regular file (a symlink to one is fine). */
export async function openRegularFile(path: string, missing: MissingFile): Promise<FileHandle> {
  let info: Stats;
  try {
    info = await stat(path);
  } catch (error) {
    throw missing(path, reasonOf(error));
  }
  if (!info.isFile()) throw notRegular(path, info);
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw missing(path, reasonOf(error));
  }
  const opened = await handle.stat();
  if (!opened.isFile()) {
    await handle.close();
    throw notRegular(path, opened);
  }
  return handle;
}

/** The whole text of a small regular file, decoded as UTF-8 (invalid bytes refused by `invalid`). */
export async function readRegularText(
  path: string,
  missing: MissingFile,
  invalid: (path: string, reason: string) => DramaError,
): Promise<string> {
  const handle = await openRegularFile(path, missing);
  let bytes: Buffer;
  try {
    bytes = await handle.readFile();
  } catch (error) {
    throw missing(path, reasonOf(error));
  } finally {
    await handle.close();
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw invalid(path, 'is not valid UTF-8 text');
  }
}

/**
 * Refuses a checkpoint folder holding a special file (FIFO, socket, device) or a folder where a file is read, before
 * any loader opens one: some read synchronously (the tokenizer) or in parallel, and one blocked open would stall them.
 */
export async function checkCheckpointFolder(dir: string): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return; // a missing or unreadable folder is reported by the first loader that needs it
  }
  for (const entry of entries) {
    if (entry.isFile() || (entry.isDirectory() && !READ_AS_FILE.test(entry.name))) continue;
    let info: Stats;
    try {
      info = await stat(join(dir, entry.name));
    } catch {
      continue; // a broken link is reported by the loader that reads it, if one does
    }
    if (info.isFile() || (info.isDirectory() && !READ_AS_FILE.test(entry.name))) continue;
    throw notRegular(join(dir, entry.name), info);
  }
}
