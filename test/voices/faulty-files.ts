// A CatalogFileSystem over node:fs that fails one chosen call, once, with an errno error (ENOSPC, EIO) as the kernel
// would: a write that fails does so part-way, after writing the first half of its bytes.
import { basename } from 'node:path';
import { type CatalogFileHandle, type CatalogFileSystem, nodeFileSystem } from '../../src/voices/synced-files.ts';

export type FaultOperation = 'mkdir' | 'open' | 'write' | 'sync' | 'rename' | 'remove';

export interface Fault {
  readonly operation: FaultOperation;
  /** Picks the call by its path (the source path for rename; the opened path for write and sync). */
  readonly path: (path: string) => boolean;
  readonly code: 'ENOSPC' | 'EIO';
}

function errnoError(code: string, operation: string, path: string): NodeJS.ErrnoException {
  const message = code === 'ENOSPC' ? 'no space left on device' : 'i/o error';
  return Object.assign(new Error(`${code}: ${message}, ${operation} '${path}'`), { code, syscall: operation, path });
}

export class FaultyFiles {
  /** True once the fault has fired. */
  hit = false;
  readonly files: CatalogFileSystem;

  constructor(private readonly fault: Fault) {
    const base = nodeFileSystem;
    this.files = {
      mkdir: async (path, options) => {
        this.maybeFail('mkdir', path);
        return base.mkdir(path, options);
      },
      readdir: (path) => base.readdir(path),
      readFile: (path) => base.readFile(path),
      stat: (path) => base.stat(path),
      rename: async (from, to) => {
        this.maybeFail('rename', from);
        return base.rename(from, to);
      },
      remove: async (path) => {
        this.maybeFail('remove', path);
        return base.remove(path);
      },
      open: async (path, flags) => {
        this.maybeFail('open', path);
        return this.wrap(await base.open(path, flags), path);
      },
    };
  }

  private fires(operation: FaultOperation, path: string): boolean {
    if (this.hit || operation !== this.fault.operation || !this.fault.path(path)) return false;
    this.hit = true;
    return true;
  }

  private maybeFail(operation: FaultOperation, path: string): void {
    if (this.fires(operation, path)) throw errnoError(this.fault.code, operation, path);
  }

  private wrap(handle: CatalogFileHandle, path: string): CatalogFileHandle {
    return {
      writeFile: async (data) => {
        if (!this.fires('write', path)) return handle.writeFile(data);
        const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
        await handle.writeFile(bytes.subarray(0, bytes.length >> 1));
        throw errnoError(this.fault.code, 'write', path);
      },
      sync: async () => {
        this.maybeFail('sync', path);
        return handle.sync();
      },
      close: () => handle.close(),
    };
  }
}

/** Matches a file of that name inside a voice's temporary folder. */
export const temporaryFile = (name: string) => (path: string) => path.includes('/.tmp-') && basename(path) === name;
