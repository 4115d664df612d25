// Durable file operations for the catalog: a file is written and fsynced before it counts, and a folder is fsynced
// after entries are created or renamed in it, so that after a crash a renamed folder is complete on disk.
import { open } from 'node:fs/promises';

export async function writeFileSynced(path: string, bytes: Uint8Array | string): Promise<void> {
  const handle = await open(path, 'wx');
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Makes the folder's entry list (creations, renames, removals) durable. */
export async function syncFolder(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
