// The catalog's file layer: every file-system call the catalog makes goes through a CatalogFileSystem (node:fs by
// default), so a test can make any one step fail (ENOSPC, EIO) and check that nothing half-written remains.
// Durable writes: a file is written and fsynced before it counts, and a folder is fsynced after entries are created
// or renamed in it, so that after a crash a renamed folder is complete on disk.
import type { Dirent, Stats } from 'node:fs';
import * as fs from 'node:fs/promises';

export interface CatalogFileHandle {
  writeFile(data: Uint8Array | string): Promise<void>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

export interface CatalogFileSystem {
  mkdir(path: string, options?: { recursive: true }): Promise<unknown>;
  readdir(path: string): Promise<Dirent[]>;
  readFile(path: string): Promise<Uint8Array>;
  stat(path: string): Promise<Stats>;
  rename(from: string, to: string): Promise<void>;
  /** Removes a file or folder tree; absent is fine. */
  remove(path: string): Promise<void>;
  /** `wx` (create, never replace) for writing, `r` for syncing a folder. */
  open(path: string, flags: 'wx' | 'r'): Promise<CatalogFileHandle>;
}

/** The real file system; each call looks node:fs up when made. */
export const nodeFileSystem: CatalogFileSystem = {
  mkdir: (path, options) => fs.mkdir(path, options),
  readdir: (path) => fs.readdir(path, { withFileTypes: true }),
  readFile: (path) => fs.readFile(path),
  stat: (path) => fs.stat(path),
  rename: (from, to) => fs.rename(from, to),
  remove: (path) => fs.rm(path, { recursive: true, force: true }),
  open: (path, flags) => fs.open(path, flags),
};

export async function writeFileSynced(files: CatalogFileSystem, path: string, bytes: Uint8Array | string) {
  const handle = await files.open(path, 'wx');
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Makes the folder's entry list (creations, renames, removals) durable. */
export async function syncFolder(files: CatalogFileSystem, path: string): Promise<void> {
  const handle = await files.open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
