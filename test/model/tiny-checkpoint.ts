// A `tiny` synthetic checkpoint for model tests, written once per test process into a temporary folder, and a prompt
// with text rows and reference code rows.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { CpuBackend, type CpuBackendOptions } from '../../src/backend/cpu/backend.ts';
import type { CpuBuffer } from '../../src/backend/cpu/tensors.ts';
import { loadSpeechModel, type SpeechModelOptions } from '../../src/model/load-model.ts';
import type { SlotSpeechModel } from '../../src/model/speech-model.ts';
import type { PromptRows } from '../../src/model/types.ts';
import { CODES_PER_FRAME } from '../../src/shared/frame.ts';
import { synthesizeCheckpoint } from '../../src/synth/synthesize.ts';

let directory: Promise<string> | undefined;

export function tinyCheckpointDir(): Promise<string> {
  directory ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'drama3-tiny-'));
    after(() => rm(dir, { recursive: true, force: true }));
    await synthesizeCheckpoint(dir, { preset: 'tiny', seed: 7, experts: 'fp8' });
    return dir;
  })();
  return directory;
}

export type CpuSpeechModel = SlotSpeechModel<CpuBuffer>;

export async function loadTinyModel(options: SpeechModelOptions & CpuBackendOptions = {}): Promise<CpuSpeechModel> {
  return loadSpeechModel(await tinyCheckpointDir(), new CpuBackend(options), options);
}

/** 30 text rows, then 40 reference code rows, then 10 text rows (the generation prompt's tail). */
export function samplePrompt(semanticBegin: number): PromptRows {
  const total = 80;
  const tokens = new Int32Array(total);
  const codes = new Int32Array(total * CODES_PER_FRAME).fill(-1);
  for (let row = 0; row < total; row++) {
    const isCode = row >= 30 && row < 70;
    if (!isCode) {
      tokens[row] = 1000 + ((row * 7919) % 20000);
      continue;
    }
    for (let k = 0; k < CODES_PER_FRAME; k++)
      codes[row * CODES_PER_FRAME + k] = (row * 131 + k * 37) % (k === 0 ? 4096 : 1024);
    tokens[row] = semanticBegin + codes[row * CODES_PER_FRAME]!;
  }
  return { tokens, codes, referenceRows: 70 };
}

/** A prompt of `length` rows: text rows with reference code rows in the middle third, varied by `salt`. */
export function mixedPrompt(semanticBegin: number, length: number, salt: number): PromptRows {
  const tokens = new Int32Array(length);
  const codes = new Int32Array(length * CODES_PER_FRAME).fill(-1);
  for (let row = 0; row < length; row++) {
    if (row >= length / 3 && row < (2 * length) / 3) {
      for (let k = 0; k < CODES_PER_FRAME; k++)
        codes[row * CODES_PER_FRAME + k] = (row * 131 + k * 37 + salt) % (k === 0 ? 4096 : 1024);
      tokens[row] = semanticBegin + codes[row * CODES_PER_FRAME]!;
    } else {
      tokens[row] = 1000 + ((row * 7919 + salt * 31) % 20000);
    }
  }
  return { tokens, codes, referenceRows: 0 };
}
