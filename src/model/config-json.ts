// config.json (snake_case, as Hugging Face writes it) ⇄ Drama3Config. Every field is checked by kind and refused by
// name with its path; keys we do not know are collected and reported once, never fatal. `configToJson` writes what
// `parseConfig` reads back to the same config.
import { codecConfigToJson, parseCodecConfig } from '../codec/config.ts';
import { FULL_PRESET } from './config-presets.ts';
import { asObject, ConfigSection, configError } from './config-read.ts';
import {
  type AudioConfig,
  checkAgreement,
  type Drama3Config,
  LAYER_TYPES,
  type LayerType,
  makeAudioConfig,
  makeTextConfig,
  makeTowerConfig,
  type QuantizationConfig,
  type SpecialTokenIds,
  type TextConfig,
  type TowerConfig,
} from './config-types.ts';

export const DEFAULT_PROMPT_FORMAT = 'reference-bracket-v1';

/** Keys transformers writes that carry no meaning for inference. */
const IGNORED_TEXT_KEYS = [
  'model_type',
  'dtype',
  'torch_dtype',
  'initializer_range',
  'use_cache',
  'output_router_logits',
  'router_aux_loss_coef',
  'attention_dropout',
  'bos_token_id',
  'pad_token_id',
  'full_attention_interval',
  'mtp_num_hidden_layers',
  'mtp_use_dedicated_embeddings',
  'transformers_version',
];
const IGNORED_ROOT_KEYS = ['architectures', 'transformers_version', 'dtype', 'torch_dtype', 'tie_word_embeddings'];

/** A known key whose value must equal the one our math implements. */
function requireValue(section: ConfigSection, key: string, expected: unknown): void {
  const value = section.raw(key);
  if (value !== undefined && JSON.stringify(value) !== JSON.stringify(expected)) {
    throw configError(
      'CONFIG_UNSUPPORTED',
      section.field(key),
      `must be ${JSON.stringify(expected)} (what the engine implements), got ${JSON.stringify(value)}`,
    );
  }
}

function parseLayerTypes(section: ConfigSection, layers: number): LayerType[] {
  if (!section.has('layer_types')) {
    const interval = section.integer('full_attention_interval', { fallback: 4 });
    return Array.from({ length: layers }, (_, index) =>
      (index + 1) % interval === 0 ? 'full_attention' : 'linear_attention',
    );
  }
  const path = section.field('layer_types');
  const values = section.array('layer_types');
  if (values.length !== layers) {
    throw configError('CONFIG_BAD_LAYER_TYPES', path, `has ${values.length} entries, num_hidden_layers is ${layers}`);
  }
  return values.map((value, index) => {
    if (!(LAYER_TYPES as readonly unknown[]).includes(value)) {
      throw configError(
        'CONFIG_BAD_LAYER_TYPES',
        `${path}[${index}]`,
        `must be "linear_attention" or "full_attention", got ${JSON.stringify(value)}`,
      );
    }
    return value as LayerType;
  });
}

/** Parses text_config; nested sections it opens are added to `sections` for the unknown-key report. */
function parseText(section: ConfigSection, sections: ConfigSection[]): TextConfig {
  const rope = section.section('rope_parameters');
  if (rope !== undefined) {
    sections.push(rope);
    rope.choice('rope_type', ['default'], 'default');
    // Text-only rows share one position on all three M-RoPE sections, which is plain 1-D RoPE.
    rope.ignore('mrope_section', 'mrope_interleaved');
  }
  const ropeSource = rope?.has('rope_theta') ? rope : section;
  const rotarySource = rope?.has('partial_rotary_factor') ? rope : section;
  requireValue(section, 'hidden_act', 'silu');
  requireValue(section, 'attention_bias', false);
  requireValue(section, 'attn_output_gate', true);
  requireValue(section, 'norm_topk_prob', true);
  requireValue(section, 'decoder_sparse_step', 1);
  requireValue(section, 'mlp_only_layers', []);
  section.ignore(...IGNORED_TEXT_KEYS);
  const layers = section.integer('num_hidden_layers');
  const text = makeTextConfig({
    hiddenSize: section.integer('hidden_size'),
    layerTypes: parseLayerTypes(section, layers),
    attentionHeads: section.integer('num_attention_heads'),
    keyValueHeads: section.integer('num_key_value_heads'),
    headDim: section.integer('head_dim'),
    ropeTheta: ropeSource.positive('rope_theta'),
    partialRotaryFactor: rotarySource.positive('partial_rotary_factor', { fallback: 0.25 }),
    linearKeyHeads: section.integer('linear_num_key_heads'),
    linearValueHeads: section.integer('linear_num_value_heads'),
    linearKeyHeadDim: section.integer('linear_key_head_dim'),
    linearValueHeadDim: section.integer('linear_value_head_dim'),
    linearConvKernel: section.integer('linear_conv_kernel_dim', { fallback: 4 }),
    experts: section.integer('num_experts'),
    expertsPerToken: section.integer('num_experts_per_tok'),
    expertIntermediate: section.integer('moe_intermediate_size'),
    sharedExpertIntermediate: section.integer('shared_expert_intermediate_size'),
    rmsNormEps: section.positive('rms_norm_eps', { fallback: 1e-6 }),
    maxPositions: section.integer('max_position_embeddings'),
    vocabSize: section.integer('vocab_size'),
    tieWordEmbeddings: section.boolean('tie_word_embeddings', false),
    eosTokenIds: section.tokenIds('eos_token_id'),
  });
  return text;
}

function parseTower(section: ConfigSection): TowerConfig {
  return makeTowerConfig({
    sharedLayers: section.integer('num_shared_layers', { minimum: 0 }),
    codebookLayers: section.integer('num_codebook_layers'),
    hiddenSize: section.integer('hidden_size'),
    attentionHeads: section.integer('num_attention_heads'),
    keyValueHeads: section.integer('num_key_value_heads'),
    headDim: section.integer('head_dim'),
    intermediate: section.integer('intermediate_size'),
    ropeTheta: section.positive('rope_theta'),
    rotaryDim: section.integer('rotary_dim'),
    ropeStyle: section.choice('rope_style', ['interleaved', 'neox']),
    rmsNormEps: section.positive('rms_norm_eps', { fallback: 1e-6 }),
  });
}

function parseAudio(section: ConfigSection): AudioConfig {
  return makeAudioConfig({
    codebooks: section.integer('num_codebooks', { minimum: 2 }),
    semanticCodebookSize: section.integer('semantic_codebook_size'),
    codebookSize: section.integer('codebook_size'),
    frameEmbeddingCodebook: section.integer('frame_embedding_codebook', { minimum: 0 }),
  });
}

function parseQuantization(section: ConfigSection): QuantizationConfig {
  const method = section.choice('quant_method', ['fp8']);
  const format = section.choice('fmt', ['e4m3'], 'e4m3');
  const blockSize = section.integerArray('weight_block_size');
  if (blockSize.length !== 2 || blockSize[0] !== 128 || blockSize[1] !== 128) {
    throw configError(
      'CONFIG_UNSUPPORTED',
      section.field('weight_block_size'),
      `must be [128, 128], got [${blockSize}]`,
    );
  }
  const activationScheme = section.choice('activation_scheme', ['dynamic'], 'dynamic');
  const modules = [section.raw('modules_to_not_convert'), section.raw('ignored_layers')].flatMap((value, index) => {
    if (value === undefined) return [];
    const key = index === 0 ? 'modules_to_not_convert' : 'ignored_layers';
    if (!Array.isArray(value)) throw configError('CONFIG_NOT_ARRAY', section.field(key), 'must be an array');
    return value.map((item, position) => {
      if (typeof item !== 'string') {
        throw configError('CONFIG_NOT_STRING', `${section.field(key)}[${position}]`, 'must be a module name');
      }
      return item;
    });
  });
  return { method, format, blockSize: [128, 128], activationScheme, modulesToNotConvert: modules };
}

function parseSpecialTokens(section: ConfigSection | undefined, vocabSize: number): SpecialTokenIds {
  const read = (key: string): number | undefined => {
    const id = section?.tokenId(key);
    if (id !== undefined && id >= vocabSize) {
      throw configError('CONFIG_ID_OUT_OF_VOCAB', section!.field(key), `${id} >= vocab_size ${vocabSize}`);
    }
    return id;
  };
  return {
    imStart: read('im_start'),
    imEnd: read('im_end'),
    voice: read('voice'),
    text: read('text'),
    interleave: read('interleave'),
    semanticBegin: read('semantic_begin'),
    speakerBegin: read('speaker_begin'),
  };
}

/**
 * Parses a checkpoint's config.json. Absent `tower_config` / `audio_config` / `codec_config` fall back to the full
 * geometry's guesses (named in `defaulted`); `unknownKeys` lists every key path nothing read.
 */
export function parseConfig(json: unknown): { config: Drama3Config; unknownKeys: string[]; defaulted: string[] } {
  const root = new ConfigSection(asObject(json, 'config.json'), '');
  root.ignore(...IGNORED_ROOT_KEYS);
  root.choice('model_type', ['drama3', 'qwen3_5_moe'], 'drama3');
  const defaulted: string[] = [];
  const textSection = root.section('text_config');
  if (textSection === undefined) throw configError('CONFIG_MISSING_FIELD', 'text_config', 'is missing');
  const sections = [root, textSection];
  const text = parseText(textSection, sections);
  const towerSection = root.section('tower_config');
  const audioSection = root.section('audio_config');
  const quantizationSection = root.section('quantization_config');
  const tokensSection = root.section('special_token_ids');
  if (towerSection === undefined) defaulted.push('tower_config');
  if (audioSection === undefined) defaulted.push('audio_config');
  if (!root.has('codec_config')) defaulted.push('codec_config');
  const tower = towerSection === undefined ? FULL_PRESET.tower : parseTower(towerSection);
  const audio = audioSection === undefined ? FULL_PRESET.audio : parseAudio(audioSection);
  const codec = parseCodecConfig(root.raw('codec_config'), 'config.json');
  checkAgreement(text, tower, audio, codec);
  const config: Drama3Config = {
    text,
    tower,
    audio,
    codec,
    quantization: quantizationSection === undefined ? undefined : parseQuantization(quantizationSection),
    specialTokens: parseSpecialTokens(tokensSection, text.vocabSize),
    synthetic: root.boolean('synthetic', false),
    promptFormat: root.string('prompt_format', DEFAULT_PROMPT_FORMAT),
  };
  const unknownKeys = [...sections, towerSection, audioSection, quantizationSection, tokensSection].flatMap(
    (section) => section?.unknownKeys() ?? [],
  );
  return { config, unknownKeys, defaulted };
}

function textToJson(text: TextConfig): Record<string, unknown> {
  return {
    hidden_size: text.hiddenSize,
    num_hidden_layers: text.layers,
    layer_types: [...text.layerTypes],
    num_attention_heads: text.attentionHeads,
    num_key_value_heads: text.keyValueHeads,
    head_dim: text.headDim,
    rope_parameters: {
      rope_type: 'default',
      rope_theta: text.ropeTheta,
      partial_rotary_factor: text.partialRotaryFactor,
    },
    linear_num_key_heads: text.linearKeyHeads,
    linear_num_value_heads: text.linearValueHeads,
    linear_key_head_dim: text.linearKeyHeadDim,
    linear_value_head_dim: text.linearValueHeadDim,
    linear_conv_kernel_dim: text.linearConvKernel,
    num_experts: text.experts,
    num_experts_per_tok: text.expertsPerToken,
    moe_intermediate_size: text.expertIntermediate,
    shared_expert_intermediate_size: text.sharedExpertIntermediate,
    rms_norm_eps: text.rmsNormEps,
    max_position_embeddings: text.maxPositions,
    vocab_size: text.vocabSize,
    tie_word_embeddings: text.tieWordEmbeddings,
    ...(text.eosTokenIds.length === 0
      ? {}
      : { eos_token_id: text.eosTokenIds.length === 1 ? text.eosTokenIds[0] : [...text.eosTokenIds] }),
  };
}

/** The config.json object that `parseConfig` reads back to `config` (snake_case, what `synth` writes). */
export function configToJson(config: Drama3Config): Record<string, unknown> {
  const { tower, audio, quantization, specialTokens } = config;
  const tokens = Object.fromEntries(
    (
      [
        ['im_start', specialTokens.imStart],
        ['im_end', specialTokens.imEnd],
        ['voice', specialTokens.voice],
        ['text', specialTokens.text],
        ['interleave', specialTokens.interleave],
        ['semantic_begin', specialTokens.semanticBegin],
        ['speaker_begin', specialTokens.speakerBegin],
      ] as const
    ).filter(([, id]) => id !== undefined),
  );
  return {
    model_type: 'drama3',
    ...(config.synthetic ? { synthetic: true } : {}),
    prompt_format: config.promptFormat,
    text_config: textToJson(config.text),
    audio_config: {
      num_codebooks: audio.codebooks,
      semantic_codebook_size: audio.semanticCodebookSize,
      codebook_size: audio.codebookSize,
      frame_embedding_codebook: audio.frameEmbeddingCodebook,
    },
    tower_config: {
      num_shared_layers: tower.sharedLayers,
      num_codebook_layers: tower.codebookLayers,
      hidden_size: tower.hiddenSize,
      num_attention_heads: tower.attentionHeads,
      num_key_value_heads: tower.keyValueHeads,
      head_dim: tower.headDim,
      intermediate_size: tower.intermediate,
      rope_theta: tower.ropeTheta,
      rotary_dim: tower.rotaryDim,
      rope_style: tower.ropeStyle,
      rms_norm_eps: tower.rmsNormEps,
    },
    ...(quantization === undefined
      ? {}
      : {
          quantization_config: {
            quant_method: quantization.method,
            fmt: quantization.format,
            weight_block_size: [...quantization.blockSize],
            activation_scheme: quantization.activationScheme,
            ...(quantization.modulesToNotConvert.length === 0
              ? {}
              : { modules_to_not_convert: [...quantization.modulesToNotConvert] }),
          },
        }),
    ...(Object.keys(tokens).length === 0 ? {} : { special_token_ids: tokens }),
    codec_config: codecConfigToJson(config.codec),
  };
}
