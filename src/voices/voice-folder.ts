// One voice folder on disk, written and removed as a unit. A voice is written into a hidden temporary folder, each
// file fsynced, then renamed into place and the parent fsynced, so a crash leaves the whole voice or none of it.
// Replacing a voice first moves the old folder aside (`.old-…`); a removal renames to `.del-…` first. A step that
// fails (ENOSPC, EIO) undoes the steps before it, so the catalog folder is left as it was, and is reported as
// VOICE_WRITE_FAILED or VOICE_REMOVE_FAILED; what a crash interrupts, the next open cleans up (catalog.ts).
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { DramaError } from '../errors.ts';
import type { Frame } from '../model/types.ts';
import {
  bytesToFrames,
  CODES_FILE,
  MANIFEST_FILE,
  parseManifest,
  sha256,
  TRANSCRIPT_FILE,
  type VoiceManifest,
} from './manifest.ts';
import { checkVoiceName } from './names.ts';
import { type CatalogFileSystem, syncFolder, writeFileSynced } from './synced-files.ts';

export const TEMPORARY_PREFIX = '.tmp-';
export const ASIDE_PREFIX = '.old-';
export const REMOVED_PREFIX = '.del-';

export interface Voice {
  /** The name is the id. */
  readonly name: string;
  readonly createdAt: string;
  readonly text: string;
  /** Encoded reference frames, [F] of [K]. */
  readonly frames: readonly Frame[];
  readonly audioFile: string;
  readonly audioBytes: number;
}

/** The files of one voice, ready to write. */
export interface VoiceFiles {
  readonly manifest: VoiceManifest;
  readonly audio: Uint8Array;
  readonly codes: Uint8Array;
}

function failure(code: string, what: string, name: string, error: unknown): DramaError {
  const reason = (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
  return new DramaError(code, `could not ${what} the voice '${name}': ${reason}; the catalog is unchanged`, {
    kind: 'internal',
    param: 'name',
    cause: error,
  });
}

/** Runs each undo step even when one fails: whatever is left over, the next open cleans up or restores. */
async function undo(steps: readonly (() => Promise<unknown>)[]): Promise<void> {
  for (const step of steps) await step().catch(() => {});
}

/** Writes `voice` as the folder `name` in `dir`, replacing the folder there when `replacing`. */
export async function writeVoiceFolder(
  files: CatalogFileSystem,
  dir: string,
  voice: VoiceFiles,
  replacing: boolean,
): Promise<void> {
  const { manifest } = voice;
  const name = manifest.name;
  const suffix = randomBytes(4).toString('hex');
  const temporary = join(dir, `${TEMPORARY_PREFIX}${name}-${suffix}`);
  const aside = join(dir, `${ASIDE_PREFIX}${name}-${suffix}`);
  const target = join(dir, name);
  let movedAside = false;
  let placed = false;
  try {
    await files.mkdir(temporary);
    await writeFileSynced(files, join(temporary, manifest.audio.file), voice.audio);
    await writeFileSynced(files, join(temporary, TRANSCRIPT_FILE), manifest.ref_text);
    await writeFileSynced(files, join(temporary, CODES_FILE), voice.codes);
    await writeFileSynced(files, join(temporary, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
    await syncFolder(files, temporary);
    if (replacing) {
      await files.rename(target, aside);
      movedAside = true;
    }
    await files.rename(temporary, target);
    placed = true;
    await syncFolder(files, dir);
  } catch (error) {
    await undo([
      async () => placed && (await files.rename(target, temporary)),
      async () => movedAside && (await files.rename(aside, target)),
      () => files.remove(temporary),
      () => syncFolder(files, dir),
    ]);
    throw failure('VOICE_WRITE_FAILED', 'store', name, error);
  }
  // The new voice is durable: a failure to delete the old folder leaves `.old-…`, which the next open removes.
  if (replacing) await files.remove(aside).catch(() => {});
}

/** Removes the folder `name` from `dir`. */
export async function removeVoiceFolder(files: CatalogFileSystem, dir: string, name: string): Promise<void> {
  const removed = join(dir, `${REMOVED_PREFIX}${name}-${randomBytes(4).toString('hex')}`);
  let moved = false;
  try {
    await files.rename(join(dir, name), removed);
    moved = true;
    await syncFolder(files, dir);
  } catch (error) {
    await undo([async () => moved && (await files.rename(removed, join(dir, name))), () => syncFolder(files, dir)]);
    throw failure('VOICE_REMOVE_FAILED', 'remove', name, error);
  }
  // The removal is durable: a `.del-…` left behind by a failed delete is removed by the next open.
  await files.remove(removed).catch(() => {});
}

export function toVoice(manifest: VoiceManifest, frames: readonly Frame[]): Voice {
  return {
    name: manifest.name,
    createdAt: manifest.created_at,
    text: manifest.ref_text,
    frames,
    audioFile: manifest.audio.file,
    audioBytes: manifest.audio.bytes,
  };
}

/** Loads and checks one folder: names, sizes and digests must all agree with the manifest. */
export async function loadVoice(files: CatalogFileSystem, dir: string, folder: string): Promise<Voice> {
  checkVoiceName(folder, 'folder');
  const path = join(dir, folder);
  const text = async (file: string) =>
    new TextDecoder('utf-8', { ignoreBOM: true }).decode(await files.readFile(join(path, file)));
  const manifest = parseManifest(await text(MANIFEST_FILE));
  const corrupt = (reason: string) => new DramaError('VOICE_CORRUPT', reason, { kind: 'internal' });
  if (manifest.name !== folder) throw corrupt(`manifest name '${manifest.name}' differs from the folder name`);
  const codes = new Uint8Array(await files.readFile(join(path, manifest.codes.file)));
  if (codes.length !== manifest.codes.bytes || sha256(codes) !== manifest.codes.sha256) {
    throw corrupt(`${manifest.codes.file} does not match its size or digest in the manifest`);
  }
  const audioSize = (await files.stat(join(path, manifest.audio.file))).size;
  if (audioSize !== manifest.audio.bytes) {
    throw corrupt(`${manifest.audio.file} is ${audioSize} bytes; the manifest says ${manifest.audio.bytes}`);
  }
  if ((await text(TRANSCRIPT_FILE)) !== manifest.ref_text) {
    throw corrupt(`${TRANSCRIPT_FILE} differs from the manifest's ref_text`);
  }
  return toVoice(manifest, bytesToFrames(codes));
}
