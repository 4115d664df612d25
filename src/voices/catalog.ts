// The voice catalog: one folder per voice under the catalog folder (layout in manifest.ts). A voice is written into
// a hidden temporary folder, each file fsynced, then renamed into place and the parent fsynced, so a crash leaves the
// whole voice or none of it. Replacing a voice first moves the old folder aside (`.old-…`), and start-up restores it
// when its voice is missing; a removal renames to `.del-…` first. Start-up removes every other leftover. A corrupt
// folder is reported by name and skipped.
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DramaError } from '../errors.ts';
import type { Frame } from '../model/types.ts';
import {
  bytesToFrames,
  CODES_FILE,
  framesToBytes,
  MANIFEST_FILE,
  MANIFEST_FORMAT,
  parseManifest,
  sha256,
  TRANSCRIPT_FILE,
  type VoiceManifest,
} from './manifest.ts';
import { checkVoiceAudioSize, checkVoiceFrames, checkVoiceName, checkVoiceText } from './names.ts';
import { syncFolder, writeFileSynced } from './synced-files.ts';

const TEMPORARY_PREFIX = '.tmp-';
const ASIDE_PREFIX = '.old-';
const REMOVED_PREFIX = '.del-';

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

export interface NewVoice {
  readonly name: string;
  /** The uploaded file's bytes. */
  readonly audio: Uint8Array;
  /** File extension for the stored audio (its sniffed format). */
  readonly audioExtension: string;
  readonly text: string;
  readonly frames: readonly Frame[];
  readonly overwrite?: boolean;
}

/** A folder that could not be loaded, and why. */
export interface CatalogProblem {
  readonly folder: string;
  readonly reason: string;
}

export type VoiceChange = { readonly type: 'added' | 'replaced' | 'removed'; readonly name: string };

export class VoiceCatalog {
  private readonly voices = new Map<string, Voice>();
  /** Inode of each voice folder as loaded: a folder renamed into place by another process has a new one. */
  private readonly inodes = new Map<string, number>();
  private scannedAt = 0;
  private readonly listeners: ((change: VoiceChange) => void)[] = [];
  /** Writes run one at a time, so two uploads of one name cannot interleave their renames. */
  private writing: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly dir: string,
    readonly problems: readonly CatalogProblem[],
  ) {}

  /** Opens (creating when absent) the catalog folder and loads every voice in it. */
  static async open(dir: string): Promise<VoiceCatalog> {
    await mkdir(dir, { recursive: true });
    const entries = await readdir(dir, { withFileTypes: true });
    const names = new Set(entries.filter((entry) => !entry.name.startsWith('.')).map((entry) => entry.name));
    for (const entry of entries) {
      if (entry.name.startsWith(TEMPORARY_PREFIX) || entry.name.startsWith(REMOVED_PREFIX))
        await rm(join(dir, entry.name), { recursive: true, force: true });
      else if (entry.name.startsWith(ASIDE_PREFIX)) {
        // `.old-NAME-XXXXXXXX`: a replacement interrupted between its two renames.
        const name = entry.name.slice(ASIDE_PREFIX.length, -9);
        if (!names.has(name) && entry.isDirectory()) {
          await rename(join(dir, entry.name), join(dir, name));
          names.add(name);
        } else await rm(join(dir, entry.name), { recursive: true, force: true });
      }
    }
    const problems: CatalogProblem[] = [];
    const loaded: Voice[] = [];
    for (const name of [...names].sort()) {
      try {
        loaded.push(await loadVoice(dir, name));
      } catch (error) {
        problems.push({ folder: name, reason: error instanceof Error ? error.message : String(error) });
      }
    }
    const catalog = new VoiceCatalog(dir, problems);
    for (const voice of loaded) catalog.voices.set(voice.name, voice);
    for (const name of names) catalog.inodes.set(name, await folderInode(join(dir, name)));
    catalog.scannedAt = Date.now();
    return catalog;
  }

  list(): Voice[] {
    return [...this.voices.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  get(name: string): Voice | undefined {
    return this.voices.get(name);
  }

  /** Takes in voices that another process (`drama3 voices` beside a running server) added, replaced or removed. */
  refresh(): Promise<void> {
    return this.serially(() => this.scan());
  }

  /** refresh(), unless the last look at the folder is more recent than `milliseconds`. */
  async refreshIfOlder(milliseconds: number): Promise<void> {
    if (Date.now() - this.scannedAt >= milliseconds) await this.refresh();
  }

  /** Called after each change that reached the disk (cache invalidation). */
  onChange(listener: (change: VoiceChange) => void): void {
    this.listeners.push(listener);
  }

  /** Stores a voice; VOICE_EXISTS (409) when the name is taken and `overwrite` is not set. */
  add(voice: NewVoice): Promise<Voice> {
    return this.serially(() => this.write(voice));
  }

  /** Removes a voice; VOICE_NOT_FOUND (404) when absent. */
  remove(name: string): Promise<void> {
    return this.serially(async () => {
      checkVoiceName(name);
      await this.scan();
      if (!this.voices.has(name)) throw notFound(name);
      const removed = join(this.dir, `${REMOVED_PREFIX}${name}-${randomBytes(4).toString('hex')}`);
      await rename(join(this.dir, name), removed);
      await syncFolder(this.dir);
      this.voices.delete(name);
      this.inodes.delete(name);
      await rm(removed, { recursive: true, force: true });
      this.notify({ type: 'removed', name });
    });
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const next = this.writing.then(work, work);
    this.writing = next.catch(() => {});
    return next;
  }

  private async write(voice: NewVoice): Promise<Voice> {
    const name = checkVoiceName(voice.name);
    const text = checkVoiceText(voice.text);
    checkVoiceAudioSize(voice.audio.length);
    checkVoiceFrames(voice.frames.length);
    if (!/^[a-z0-9]{1,8}$/.test(voice.audioExtension)) {
      throw new DramaError('VOICE_AUDIO_EXTENSION_INVALID', `audio extension ${voice.audioExtension} is invalid`, {
        kind: 'internal',
      });
    }
    await this.scan();
    const replacing = this.voices.has(name);
    if (replacing && voice.overwrite !== true) throw voiceExists(name);
    const codes = framesToBytes(voice.frames);
    const audioFile = `audio.${voice.audioExtension}`;
    const manifest: VoiceManifest = {
      format: MANIFEST_FORMAT,
      name,
      created_at: new Date().toISOString(),
      ref_text: text,
      frames: voice.frames.length,
      codebooks: voice.frames[0]!.length,
      audio: { file: audioFile, bytes: voice.audio.length, sha256: sha256(voice.audio) },
      codes: { file: CODES_FILE, bytes: codes.length, sha256: sha256(codes) },
    };
    const suffix = randomBytes(4).toString('hex');
    const temporary = join(this.dir, `${TEMPORARY_PREFIX}${name}-${suffix}`);
    await mkdir(temporary);
    try {
      await writeFileSynced(join(temporary, audioFile), voice.audio);
      await writeFileSynced(join(temporary, TRANSCRIPT_FILE), text);
      await writeFileSynced(join(temporary, CODES_FILE), codes);
      await writeFileSynced(join(temporary, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
      await syncFolder(temporary);
      const aside = join(this.dir, `${ASIDE_PREFIX}${name}-${suffix}`);
      if (replacing) await rename(join(this.dir, name), aside);
      await rename(temporary, join(this.dir, name));
      await syncFolder(this.dir);
      if (replacing) await rm(aside, { recursive: true, force: true });
    } catch (error) {
      await rm(temporary, { recursive: true, force: true });
      throw error;
    }
    const stored = toVoice(manifest, voice.frames);
    this.voices.set(name, stored);
    this.inodes.set(name, await folderInode(join(this.dir, name)));
    this.notify({ type: replacing ? 'replaced' : 'added', name });
    return stored;
  }

  private async scan(): Promise<void> {
    const present = new Map<string, number>();
    for (const entry of await readdir(this.dir, { withFileTypes: true })) {
      if (!entry.name.startsWith('.') && entry.isDirectory())
        present.set(entry.name, await folderInode(join(this.dir, entry.name)));
    }
    this.scannedAt = Date.now();
    for (const name of [...this.voices.keys()]) {
      if (present.has(name)) continue;
      this.voices.delete(name);
      this.inodes.delete(name);
      this.notify({ type: 'removed', name });
    }
    for (const [name, inode] of present) {
      if (this.inodes.get(name) === inode) continue;
      this.inodes.set(name, inode);
      const replacing = this.voices.delete(name);
      try {
        this.voices.set(name, await loadVoice(this.dir, name));
      } catch {
        // A corrupt folder is skipped here as at start-up (where it is reported); a later rename retries it.
        if (replacing) this.notify({ type: 'removed', name });
        continue;
      }
      this.notify({ type: replacing ? 'replaced' : 'added', name });
    }
  }

  private notify(change: VoiceChange): void {
    for (const listener of this.listeners) listener(change);
  }
}

export function notFound(name: string, param = 'id'): DramaError {
  return new DramaError('VOICE_NOT_FOUND', `no voice named '${name}'`, { kind: 'not_found', param });
}

export function voiceExists(name: string): DramaError {
  return new DramaError('VOICE_EXISTS', `a voice named '${name}' exists; send overwrite=true to replace it`, {
    kind: 'conflict',
    param: 'name',
  });
}

async function folderInode(path: string): Promise<number> {
  return (await stat(path)).ino;
}

function toVoice(manifest: VoiceManifest, frames: readonly Frame[]): Voice {
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
async function loadVoice(dir: string, folder: string): Promise<Voice> {
  checkVoiceName(folder, 'folder');
  const path = join(dir, folder);
  const manifest = parseManifest(await readFile(join(path, MANIFEST_FILE), 'utf8'));
  const corrupt = (reason: string) => new DramaError('VOICE_CORRUPT', reason, { kind: 'internal' });
  if (manifest.name !== folder) throw corrupt(`manifest name '${manifest.name}' differs from the folder name`);
  const codes = new Uint8Array(await readFile(join(path, manifest.codes.file)));
  if (codes.length !== manifest.codes.bytes || sha256(codes) !== manifest.codes.sha256) {
    throw corrupt(`${manifest.codes.file} does not match its size or digest in the manifest`);
  }
  const audioSize = (await stat(join(path, manifest.audio.file))).size;
  if (audioSize !== manifest.audio.bytes) {
    throw corrupt(`${manifest.audio.file} is ${audioSize} bytes; the manifest says ${manifest.audio.bytes}`);
  }
  const transcript = await readFile(join(path, TRANSCRIPT_FILE), 'utf8');
  if (transcript !== manifest.ref_text) throw corrupt(`${TRANSCRIPT_FILE} differs from the manifest's ref_text`);
  return toVoice(manifest, bytesToFrames(codes));
}
