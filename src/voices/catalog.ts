// The voice catalog: one folder per voice under the catalog folder (layout in manifest.ts), each written and
// removed as a unit (voice-folder.ts). Start-up restores a replaced voice's old folder (`.old-…`) when its voice is
// missing and removes every other leftover. A corrupt folder is reported by name and skipped. Every file-system
// call goes through the catalog's CatalogFileSystem (node:fs unless one is given).
import { join } from 'node:path';
import { DramaError } from '../errors.ts';
import type { Frame } from '../model/types.ts';
import { CODES_FILE, framesToBytes, MANIFEST_FORMAT, sha256, type VoiceManifest } from './manifest.ts';
import { checkVoiceAudioSize, checkVoiceFrames, checkVoiceName, checkVoiceText } from './names.ts';
import { type CatalogFileSystem, nodeFileSystem } from './synced-files.ts';
import {
  ASIDE_PREFIX,
  loadVoice,
  REMOVED_PREFIX,
  removeVoiceFolder,
  TEMPORARY_PREFIX,
  toVoice,
  type Voice,
  writeVoiceFolder,
} from './voice-folder.ts';

export type { Voice } from './voice-folder.ts';

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
  /** The refresh queued most recently and not yet done, and when it was asked for: later askers share it. */
  private pendingRefresh: { readonly done: Promise<void>; readonly askedAt: number } | undefined;
  private readonly listeners: ((change: VoiceChange) => void)[] = [];
  /** Writes run one at a time, so two uploads of one name cannot interleave their renames. */
  private writing: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly dir: string,
    readonly problems: readonly CatalogProblem[],
    private readonly files: CatalogFileSystem,
  ) {}

  /** Opens (creating when absent) the catalog folder and loads every voice in it. */
  static async open(dir: string, options: { files?: CatalogFileSystem } = {}): Promise<VoiceCatalog> {
    const files = options.files ?? nodeFileSystem;
    await files.mkdir(dir, { recursive: true });
    const entries = await files.readdir(dir);
    const names = new Set(entries.filter((entry) => !entry.name.startsWith('.')).map((entry) => entry.name));
    for (const entry of entries) {
      if (entry.name.startsWith(TEMPORARY_PREFIX) || entry.name.startsWith(REMOVED_PREFIX))
        await files.remove(join(dir, entry.name));
      else if (entry.name.startsWith(ASIDE_PREFIX)) {
        // `.old-NAME-XXXXXXXX`: a replacement interrupted between its two renames.
        const name = entry.name.slice(ASIDE_PREFIX.length, -9);
        if (!names.has(name) && entry.isDirectory()) {
          await files.rename(join(dir, entry.name), join(dir, name));
          names.add(name);
        } else await files.remove(join(dir, entry.name));
      }
    }
    const problems: CatalogProblem[] = [];
    const loaded: Voice[] = [];
    for (const name of [...names].sort()) {
      try {
        loaded.push(await loadVoice(files, dir, name));
      } catch (error) {
        problems.push({ folder: name, reason: error instanceof Error ? error.message : String(error) });
      }
    }
    const catalog = new VoiceCatalog(dir, problems, files);
    for (const voice of loaded) catalog.voices.set(voice.name, voice);
    for (const name of names) catalog.inodes.set(name, (await files.stat(join(dir, name))).ino);
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

  /**
   * refresh(), unless the last look at the folder is more recent than `milliseconds`. Callers that come while a
   * refresh asked for within that time is still pending share it: one scan per period, not one per request, which
   * under load queued a scan behind every request and held each request for all the scans before its own.
   */
  async refreshIfOlder(milliseconds: number): Promise<void> {
    const now = Date.now();
    if (now - this.scannedAt < milliseconds) return;
    const pending = this.pendingRefresh;
    if (pending !== undefined && now - pending.askedAt < milliseconds) return pending.done;
    const done = this.refresh().finally(() => {
      if (this.pendingRefresh?.done === done) this.pendingRefresh = undefined;
    });
    this.pendingRefresh = { done, askedAt: now };
    return done;
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
      await removeVoiceFolder(this.files, this.dir, name);
      this.voices.delete(name);
      this.inodes.delete(name);
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
    await writeVoiceFolder(this.files, this.dir, { manifest, audio: voice.audio, codes }, replacing);
    const stored = toVoice(manifest, voice.frames);
    this.voices.set(name, stored);
    this.inodes.set(name, (await this.files.stat(join(this.dir, name))).ino);
    this.notify({ type: replacing ? 'replaced' : 'added', name });
    return stored;
  }

  private async scan(): Promise<void> {
    const present = new Map<string, number>();
    for (const entry of await this.files.readdir(this.dir)) {
      if (!entry.name.startsWith('.') && entry.isDirectory())
        present.set(entry.name, (await this.files.stat(join(this.dir, entry.name))).ino);
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
        this.voices.set(name, await loadVoice(this.files, this.dir, name));
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
