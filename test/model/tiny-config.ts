// The tiny preset as a whole Drama3Config for the config and weight-map tests: no special tokens, no quantization,
// each overridable.
import { TINY_CODEC_CONFIG } from '../../src/codec/config.ts';
import { type Drama3Config, type SpecialTokenIds, TINY_PRESET } from '../../src/model/config.ts';

export const NO_SPECIAL_TOKENS: SpecialTokenIds = {
  imStart: undefined,
  imEnd: undefined,
  voice: undefined,
  text: undefined,
  interleave: undefined,
  semanticBegin: undefined,
  speakerBegin: undefined,
};

export function tinyConfig(overrides: Partial<Drama3Config> = {}): Drama3Config {
  return {
    ...TINY_PRESET,
    codec: TINY_CODEC_CONFIG,
    quantization: undefined,
    specialTokens: NO_SPECIAL_TOKENS,
    synthetic: true,
    promptFormat: 'reference-bracket-v1',
    ...overrides,
  };
}
