// Opens checkpoint shards for the streamed load: O_DIRECT where the file system takes it (reads bypass the page
// cache, so a load does not also fill host memory with the checkpoint), ordinary reads where it answers EINVAL. The
// open and read calls are injectable so that a test can make them refuse. O_DIRECT needs aligned file offsets,
// lengths and buffer addresses: callers read the aligned superset of what they need (DIRECT_ALIGNMENT).
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

/** Offsets, lengths and buffer addresses of O_DIRECT reads are multiples of this (the page size covers every disk). */
export const DIRECT_ALIGNMENT = 4096;

/** What the stream needs of an open file. */
export interface ReadHandle {
  read(target: Uint8Array, position: number): Promise<number>;
  close(): Promise<void>;
}

/** How files are opened: `direct` asks for O_DIRECT; a refusal is thrown as the system error (code EINVAL). */
export interface FileAccess {
  open(path: string, direct: boolean): Promise<ReadHandle>;
}

const O_DIRECT = (constants as { O_DIRECT?: number }).O_DIRECT;

/** The file system through node:fs. */
export const systemFileAccess: FileAccess = {
  async open(path, direct) {
    if (direct && O_DIRECT === undefined)
      throw Object.assign(new Error('O_DIRECT is not defined here'), { code: 'EINVAL' });
    const handle = await open(path, constants.O_RDONLY | (direct ? O_DIRECT! : 0));
    return {
      read: async (target, position) => (await handle.read(target, 0, target.byteLength, position)).bytesRead,
      close: () => handle.close(),
    };
  },
};

export function isInvalidArgument(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'EINVAL';
}

/** An opened shard and whether its reads go around the page cache. */
export interface OpenedShard {
  readonly handle: ReadHandle;
  direct: boolean;
}

/** Opens `path` with O_DIRECT, falling back to the page cache when the open answers EINVAL (`notice` says so). */
export async function openShard(
  access: FileAccess,
  path: string,
  preferDirect: boolean,
  notice: (message: string) => void,
): Promise<OpenedShard> {
  if (preferDirect) {
    try {
      return { handle: await access.open(path, true), direct: true };
    } catch (error) {
      if (!isInvalidArgument(error)) throw error;
      notice(`${path}: O_DIRECT refused (EINVAL); reading through the page cache`);
    }
  }
  return { handle: await access.open(path, false), direct: false };
}

/** Swaps a shard whose O_DIRECT read answered EINVAL for an ordinary handle, once. */
export async function reopenBuffered(
  access: FileAccess,
  path: string,
  shard: OpenedShard,
  notice: (message: string) => void,
): Promise<OpenedShard> {
  await shard.handle.close();
  notice(`${path}: O_DIRECT read refused (EINVAL); reading through the page cache`);
  return { handle: await access.open(path, false), direct: false };
}

export function alignDown(value: number): number {
  return Math.floor(value / DIRECT_ALIGNMENT) * DIRECT_ALIGNMENT;
}

export function alignUp(value: number): number {
  return Math.ceil(value / DIRECT_ALIGNMENT) * DIRECT_ALIGNMENT;
}
