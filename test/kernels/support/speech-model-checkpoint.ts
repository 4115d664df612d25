// The synthetic checkpoints the speech-model GPU tests load (written once per process into a temporary folder, or
// taken from DRAMA3_SPEECH_CHECKPOINT when a parent process already wrote one), the backends they compare, and their
// prompts: text rows, then reference code rows, then a short text tail.
import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CpuBackend } from '../../../src/backend/cpu/backend.ts';
import type { LinearSums, PrecisionName } from '../../../src/backend/cpu/precision.ts';
import type { CpuBuffer } from '../../../src/backend/cpu/tensors.ts';
import { loadSpeechModel } from '../../../src/model/load-model.ts';
import type { SlotSpeechModel } from '../../../src/model/speech-model.ts';
import type { LaneCapacity, PromptRows } from '../../../src/model/types.ts';
import { CODES_PER_FRAME, RESIDUAL_CODEBOOK_SIZE, SEMANTIC_CODEBOOK_SIZE } from '../../../src/shared/frame.ts';
import type { SynthPreset } from '../../../src/synth/plan.ts';
import { synthesizeCheckpoint } from '../../../src/synth/synthesize.ts';
import { defaultSynthThreads } from '../../../src/synth/tensor-threads.ts';

/** Names the folder of an already written checkpoint (a child process reuses its parent's). */
export const CHECKPOINT_ENVIRONMENT = 'DRAMA3_SPEECH_CHECKPOINT';

const WIDENED_BYTES = 2 ** 30;

const written = new Map<SynthPreset, Promise<string>>();

/** The folder of a synthetic `preset` checkpoint (seed 11, FP8 experts), removed when the process exits. */
export function speechCheckpointDir(preset: SynthPreset): Promise<string> {
  const given = process.env[CHECKPOINT_ENVIRONMENT];
  if (given !== undefined && given !== '') return Promise.resolve(given);
  let directory = written.get(preset);
  if (directory === undefined) {
    directory = (async () => {
      const parent = await mkdtemp(join(tmpdir(), `drama3-${preset}-`));
      // Removed at exit, not by a test hook: hooks registered inside a test would run when that test ends.
      process.once('exit', () => rmSync(parent, { recursive: true, force: true }));
      const dir = join(parent, 'checkpoint');
      await synthesizeCheckpoint(dir, { preset, seed: 11, experts: 'fp8', threads: defaultSynthThreads() });
      return dir;
    })();
    written.set(preset, directory);
  }
  return directory;
}

/** A cpu model with every matrix widened once at load (the same bits as widening per use, much faster), and a
 *  small prefill chunk, since planning runs one chunk and the cpu gives the same bits in any chunking. */
export async function loadCpuModel(
  dir: string,
  precision: PrecisionName,
  capacity: LaneCapacity,
  linearSums: LinearSums = 'exact',
): Promise<SlotSpeechModel<CpuBuffer>> {
  return loadSpeechModel(dir, new CpuBackend({ precision, linearSums, widenedCacheBytes: WIDENED_BYTES }), {
    capacity,
    prefillChunk: 64,
  });
}

/** `textRows` text rows, `codeRows` reference code rows, `tailRows` text rows; `salt` varies tokens and codes. */
export function speechPrompt(
  semanticBegin: number,
  shape: { textRows: number; codeRows: number; tailRows: number },
  salt = 0,
): PromptRows {
  const total = shape.textRows + shape.codeRows + shape.tailRows;
  const tokens = new Int32Array(total);
  const codes = new Int32Array(total * CODES_PER_FRAME).fill(-1);
  for (let row = 0; row < total; row++) {
    const isCode = row >= shape.textRows && row < shape.textRows + shape.codeRows;
    if (!isCode) {
      tokens[row] = 1000 + ((row * 7919 + salt * 104729) % 20000);
      continue;
    }
    for (let k = 0; k < CODES_PER_FRAME; k++) {
      const size = k === 0 ? SEMANTIC_CODEBOOK_SIZE : RESIDUAL_CODEBOOK_SIZE;
      codes[row * CODES_PER_FRAME + k] = (row * 131 + k * 37 + salt * 7) % size;
    }
    tokens[row] = semanticBegin + codes[row * CODES_PER_FRAME]!;
  }
  return { tokens, codes, referenceRows: 0 };
}
