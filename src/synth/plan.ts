// What a synthetic checkpoint holds before any byte is written: its config.json (the preset, the vocabulary size
// of the tokenizer it ships rounded up to 64, the structural token ids) and the weight map's tensors with their byte
// counts. `synth --dry-run` prints this; `synthesizeCheckpoint` writes it.

import { type DType, tensorByteLength } from '../checkpoint/tensor.ts';
import { REAL_CODEC_CONFIG, TINY_CODEC_CONFIG } from '../codec/config.ts';
import { DramaError } from '../errors.ts';
import {
  DEFAULT_PROMPT_FORMAT,
  type Drama3Config,
  FP8_BLOCK_QUANTIZATION,
  FULL_PRESET,
  type ModelPreset,
  makeTextConfig,
  paddedVocabSize,
  SMALL_PRESET,
  type SpecialTokenIds,
  TINY_PRESET,
} from '../model/config.ts';
import { expectedTensors, type TensorSpec } from '../model/weights.ts';
import { SEMANTIC_CODEBOOK_SIZE } from '../shared/frame.ts';
import { IM_END, IM_START, INTERLEAVE, semanticToken, speakerTag, TEXT, VOICE } from '../text/vocabulary.ts';

export type SynthPreset = 'tiny' | 'small' | 'full';

const PRESETS: Readonly<Record<SynthPreset, ModelPreset>> = {
  tiny: TINY_PRESET,
  small: SMALL_PRESET,
  full: FULL_PRESET,
};
export type SynthExperts = 'fp8' | 'bf16';

/** Backbone prefix of the checkpoints we write. */
const SYNTH_PREFIX = 'model.';

/** Shard size: several shards even for tiny (so the index is exercised), few for full. */
export const MAX_SHARD_BYTES: Readonly<Record<SynthPreset, number>> = {
  tiny: 8 * 2 ** 20,
  small: 64 * 2 ** 20,
  full: 3 * 2 ** 30,
};

export interface TokenizerFacts {
  /** Largest id + 1 over the base vocabulary and the added tokens. */
  readonly size: number;
  readonly special: SpecialTokenIds;
}

/** Reads the size and Drama's structural token ids from a tokenizer.json text. */
export function tokenizerFacts(tokenizerJson: string): TokenizerFacts {
  const parsed = JSON.parse(tokenizerJson) as {
    model: { vocab: Record<string, number> };
    added_tokens: { id: number; content: string }[];
  };
  let largest = -1;
  for (const id of Object.values(parsed.model.vocab)) largest = Math.max(largest, id);
  const added = new Map<string, number>();
  for (const token of parsed.added_tokens) {
    added.set(token.content, token.id);
    largest = Math.max(largest, token.id);
  }
  const id = (content: string): number => {
    const value = added.get(content);
    if (value === undefined) {
      throw new DramaError('SYNTH_TOKEN_MISSING', `the synthetic tokenizer lacks ${content}`, { kind: 'internal' });
    }
    return value;
  };
  const semanticBegin = id(semanticToken(0));
  // The model treats the semantic ids as one contiguous run; the builder must have kept it so.
  if (id(semanticToken(SEMANTIC_CODEBOOK_SIZE - 1)) !== semanticBegin + SEMANTIC_CODEBOOK_SIZE - 1) {
    throw new DramaError('SYNTH_TOKEN_MISSING', 'the synthetic tokenizer has non-contiguous semantic ids', {
      kind: 'internal',
    });
  }
  return {
    size: largest + 1,
    special: {
      imStart: id(IM_START),
      imEnd: id(IM_END),
      voice: id(VOICE),
      text: id(TEXT),
      interleave: id(INTERLEAVE),
      semanticBegin,
      speakerBegin: id(speakerTag(0)),
    },
  };
}

/** The config.json of a synthetic checkpoint for `preset`. */
function syntheticConfig(preset: SynthPreset, experts: SynthExperts, tokenizer: TokenizerFacts): Drama3Config {
  const model = PRESETS[preset];
  return {
    text: makeTextConfig({
      ...model.text,
      vocabSize: paddedVocabSize(tokenizer.size),
      eosTokenIds: [tokenizer.special.imEnd!],
    }),
    tower: model.tower,
    audio: model.audio,
    // The codec runs on the cpu: small keeps tiny's, so that it stays quick to write and load.
    codec: preset === 'full' ? REAL_CODEC_CONFIG : TINY_CODEC_CONFIG,
    quantization: experts === 'fp8' ? FP8_BLOCK_QUANTIZATION : undefined,
    specialTokens: tokenizer.special,
    synthetic: true,
    promptFormat: DEFAULT_PROMPT_FORMAT,
  };
}

export interface SynthPlan {
  readonly config: Drama3Config;
  readonly specs: readonly TensorSpec[];
  readonly countByDtype: Readonly<Partial<Record<DType, number>>>;
  readonly bytesByDtype: Readonly<Partial<Record<DType, number>>>;
  /** Elements of every tensor except the FP8 block scales. */
  readonly parameters: number;
  /** Bytes of tensor data over all shards. */
  readonly totalBytes: number;
}

export function planCheckpoint(preset: SynthPreset, experts: SynthExperts, tokenizer: TokenizerFacts): SynthPlan {
  const config = syntheticConfig(preset, experts, tokenizer);
  const specs = expectedTensors(config, { prefix: SYNTH_PREFIX, experts });
  const countByDtype: Partial<Record<DType, number>> = {};
  const bytesByDtype: Partial<Record<DType, number>> = {};
  let parameters = 0;
  let totalBytes = 0;
  for (const spec of specs) {
    const bytes = tensorByteLength(spec.dtype, spec.shape);
    countByDtype[spec.dtype] = (countByDtype[spec.dtype] ?? 0) + 1;
    bytesByDtype[spec.dtype] = (bytesByDtype[spec.dtype] ?? 0) + bytes;
    totalBytes += bytes;
    if (spec.role !== 'expert_scale') parameters += spec.shape.reduce((product, size) => product * size, 1);
  }
  return { config, specs, countByDtype, bytesByDtype, parameters, totalBytes };
}

/** A tensor synthesis draws, and the name of the block scales drawn with it (an FP8 weight's, next in map order). */
export interface DrawnSpec {
  readonly spec: TensorSpec;
  readonly scaleName?: string;
}

/** The plan's specs in map order as synthesis draws them: each FP8 weight with the scales that follow it. */
export function drawnSpecs(plan: SynthPlan): DrawnSpec[] {
  const drawn: { spec: TensorSpec; scaleName?: string }[] = [];
  for (const spec of plan.specs) {
    if (spec.role === 'expert_scale') drawn.at(-1)!.scaleName = spec.name;
    else drawn.push({ spec });
  }
  return drawn;
}
