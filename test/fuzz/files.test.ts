// The file fuzz table: every case writes one malformed input (a safetensors file, a sharded index, a config.json, a
// torch .pth, an uploaded audio file) into its own temporary folder and loads it as the program does. Each must be
// refused with its named DramaError code (never a raw TypeError, RangeError or errno error), promptly (a FIFO must
// not block the load), without writing anything beside the input or leaking an open file, and the folder is gone
// afterwards. Prints the number of cases run.
import assert from 'node:assert/strict';
import { constants, readdirSync, readlinkSync } from 'node:fs';
import { mkdtemp, open, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { DramaError } from '../../src/errors.ts';
import { audioGroup, configGroup } from './config-audio-cases.ts';
import type { FileCaseGroup } from './file-case.ts';
import { indexGroup, safetensorsGroup } from './safetensors-cases.ts';
import { torchGroup } from './torch-cases.ts';

const GROUPS: FileCaseGroup[] = [safetensorsGroup, indexGroup, torchGroup, configGroup, audioGroup];
/** Far above any case's real time: only a load blocked on a FIFO reaches it. */
const HANG_MILLISECONDS = 5000;
const MINIMUM_CASES = 50;

const root = await mkdtemp(join(tmpdir(), 'drama3-file-fuzz-'));
let ran = 0;

/**
 * Open descriptors of this process as "fd → what it names" (Linux); a refusal must close whatever it opened. Names,
 * not a count: a descriptor the runtime closes meanwhile must not hide one the load left open.
 */
const openDescriptors = (): Set<string> | undefined => {
  try {
    const named = readdirSync('/proc/self/fd').flatMap((fd) => {
      try {
        return [`${fd} → ${readlinkSync(join('/proc/self/fd', fd))}`];
      } catch {
        return []; // the listing's own descriptor, closed by the time it is named
      }
    });
    return new Set(named);
  } catch {
    return undefined;
  }
};

/** Descriptors open now that were not before: what a load left open. */
const leftOpen = (before: Set<string>): string[] => [...(openDescriptors() ?? [])].filter((fd) => !before.has(fd));

/** Every path under `dir`, for checking that a load wrote nothing. */
async function listing(dir: string, prefix = ''): Promise<string[]> {
  const names: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    names.push(`${prefix}${entry.name}`);
    if (entry.isDirectory()) names.push(...(await listing(join(dir, entry.name), `${prefix}${entry.name}/`)));
  }
  return names.sort();
}

/** Frees a reader blocked opening a FIFO under `dir` (so a failing case ends instead of hanging the file). */
async function releaseFifos(dir: string): Promise<void> {
  for (const name of await listing(dir)) {
    const path = join(dir, name);
    if (!(await stat(path)).isFIFO()) continue;
    const writer = await open(path, constants.O_WRONLY | constants.O_NONBLOCK).catch(() => undefined);
    await writer?.close();
  }
}

async function outcomeOf(load: Promise<unknown>, dir: string): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise((resolve) => {
    timer = setTimeout(() => resolve('hung'), HANG_MILLISECONDS);
  });
  const outcome = await Promise.race([
    load.then(
      () => 'accepted',
      (error: unknown) => error,
    ),
    hung,
  ]);
  clearTimeout(timer);
  if (outcome === 'hung') {
    await releaseFifos(dir);
    await load.catch(() => {});
  }
  return outcome;
}

after(async () => {
  assert.deepEqual(await readdir(root), [], 'every case folder was removed');
  await rm(root, { recursive: true, force: true });
});

describe('file fuzz', () => {
  for (const group of GROUPS) {
    for (const fileCase of group.cases) {
      it(`${group.kind}: ${fileCase.name} → ${fileCase.code}`, async () => {
        const dir = await mkdtemp(join(root, 'case-'));
        try {
          const target = await fileCase.build(dir);
          const written = await listing(dir);
          const descriptors = openDescriptors();
          const outcome = await outcomeOf(group.load(target), dir);
          const shown = outcome instanceof Error ? (outcome.stack ?? outcome.message) : String(outcome);
          assert.ok(outcome instanceof DramaError, `expected ${fileCase.code}, got ${shown}`);
          assert.equal(outcome.code, fileCase.code, outcome.message);
          assert.match(outcome.code, /^[A-Z][A-Z0-9_]+$/);
          assert.deepEqual(await listing(dir), written, 'the load wrote nothing beside its input');
          if (descriptors !== undefined) assert.deepEqual(leftOpen(descriptors), [], 'every opened file was closed');
          ran++;
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      });
    }
  }

  it('ran the whole table', (t) => {
    const total = GROUPS.reduce((sum, group) => sum + group.cases.length, 0);
    t.diagnostic(`file fuzz: ${ran} cases`);
    assert.equal(ran, total, 'every case passed');
    assert.ok(ran >= MINIMUM_CASES, `at least ${MINIMUM_CASES} cases`);
  });
});
