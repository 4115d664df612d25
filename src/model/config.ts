// The checkpoint's config.json as the model sees it: types (config-types.ts), parsing with named refusals
// (config-json.ts, config-read.ts), the synth presets (config-presets.ts), and loading from a checkpoint folder.
import { join } from 'node:path';
import { readRegularText } from '../checkpoint/regular-file.ts';
import { DramaError } from '../errors.ts';
import { parseConfig } from './config-json.ts';
import type { Drama3Config } from './config-types.ts';

export { configToJson, DEFAULT_PROMPT_FORMAT, parseConfig } from './config-json.ts';
export {
  FP8_BLOCK_QUANTIZATION,
  FULL_PRESET,
  hybridLayerTypes,
  type ModelPreset,
  paddedVocabSize,
  SMALL_PRESET,
  SYNTHETIC_VOCAB_SIZE,
  TINY_PRESET,
} from './config-presets.ts';
export {
  type AudioConfig,
  codebookEmbeddingRow,
  type Drama3Config,
  type LayerType,
  makeAudioConfig,
  makeTextConfig,
  makeTowerConfig,
  type QuantizationConfig,
  type SpecialTokenIds,
  type TextConfig,
  type TowerConfig,
} from './config-types.ts';

export const CONFIG_FILE = 'config.json';

/** The line every command prints when it loads a synthetic checkpoint. */
export const SYNTHETIC_WEIGHTS_NOTICE =
  'synthetic weights: this checkpoint has random weights and speaks noise, not speech';

/** The notice for `config`, or undefined for a real checkpoint. */
export function syntheticWeightsNotice(config: Pick<Drama3Config, 'synthetic'>): string | undefined {
  return config.synthetic ? SYNTHETIC_WEIGHTS_NOTICE : undefined;
}

export interface LoadedConfig {
  readonly config: Drama3Config;
  /** Key paths in config.json that nothing read (report once, never fatal). */
  readonly unknownKeys: string[];
  /** Sections absent from config.json and filled in from the full geometry's guesses. */
  readonly defaulted: string[];
}

/** Reads and parses `<checkpointDir>/config.json`. */
export async function loadConfig(checkpointDir: string): Promise<LoadedConfig> {
  const path = join(checkpointDir, CONFIG_FILE);
  // A regular file only: a FIFO in its place would block the read forever.
  const text = await readRegularText(
    path,
    (file, reason) =>
      reason === 'ENOENT'
        ? new DramaError('CONFIG_NOT_FOUND', `no ${CONFIG_FILE} in ${checkpointDir}`, { kind: 'bad_checkpoint' })
        : new DramaError('CONFIG_UNREADABLE', `cannot read ${file}: ${reason}`, { kind: 'bad_checkpoint' }),
    (file, reason) => new DramaError('CONFIG_NOT_JSON', `${file} ${reason}`, { kind: 'bad_checkpoint' }),
  );
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new DramaError('CONFIG_NOT_JSON', `${path} is not valid JSON: ${(error as Error).message}`, {
      kind: 'bad_checkpoint',
      cause: error,
    });
  }
  return parseConfig(json);
}
