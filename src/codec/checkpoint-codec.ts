// A checkpoint folder's codec before its weights are read: `codec_config` from config.json (absent → the real codec)
// and the shapes of the weights codec.pth will load, from its index alone.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readTorchShapes } from '../checkpoint/torch-pth.ts';
import { DramaError } from '../errors.ts';
import { CODEC_FILE_NAME, codecFile } from './codec.ts';
import { type CodecConfig, parseCodecConfig } from './config.ts';
import { codecWeightShapes } from './weights.ts';

/** A checkpoint folder's codec config and its folded weights' shapes, from codec.pth's index: no tensor's bytes. */
export async function loadCheckpointCodecShapes(
  dir: string,
): Promise<{ config: CodecConfig; shapes: Map<string, readonly number[]> }> {
  const config = await loadCheckpointCodecConfig(dir);
  const stored = await readTorchShapes(await codecFile(join(dir, CODEC_FILE_NAME)));
  return { config, shapes: codecWeightShapes(config, stored) };
}

/** `codec_config` from a checkpoint folder's config.json (absent → the real codec). */
export async function loadCheckpointCodecConfig(dir: string): Promise<CodecConfig> {
  const configPath = join(dir, 'config.json');
  let json: unknown;
  try {
    json = JSON.parse(await readFile(configPath, 'utf8'));
  } catch (error) {
    throw new DramaError('CODEC_CONFIG_UNREADABLE', `cannot read ${configPath}: ${(error as Error).message}`, {
      kind: 'bad_checkpoint',
      cause: error,
    });
  }
  const codecConfig =
    typeof json === 'object' && json !== null ? (json as Record<string, unknown>).codec_config : undefined;
  return parseCodecConfig(codecConfig, configPath);
}
