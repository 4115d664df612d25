// Codec hyper-parameters (MODEL.md §6): the Fish modified DAC. JSON form lives in config.json under `codec_config`
// with snake_case keys; an absent `codec_config` means the real values. Rows: samples at 44.1 kHz; "latent rows" run at
// sampleRate / product(encoderStrides); frames run at sampleRate / frameLength.
import { DramaError } from '../errors.ts';
import {
  CODES_PER_FRAME,
  RESIDUAL_CODEBOOK_SIZE,
  SAMPLE_RATE,
  SAMPLES_PER_FRAME,
  SEMANTIC_CODEBOOK_SIZE,
} from '../shared/frame.ts';

/** A causal windowed transformer (post-module, pre-module, the encoder's last block). */
export interface CodecTransformerConfig {
  readonly layers: number;
  /** Model width; equals the channel count it runs on (no input/output projection). */
  readonly dim: number;
  readonly heads: number;
  readonly headDim: number;
  /** SwiGLU hidden width. */
  readonly intermediate: number;
  /** Each row attends to itself and the previous window-1 rows. */
  readonly window: number;
  readonly ropeBase: number;
  readonly normEps: number;
}

export interface CodecConfig {
  readonly sampleRate: number;
  /** Samples per frame. */
  readonly frameLength: number;
  readonly semanticCodebookSize: number;
  readonly residualCodebooks: number;
  readonly residualCodebookSize: number;
  /** Width of every factorised codebook entry. */
  readonly codebookDim: number;
  /** Channel width of the quantised latent (between the encoder, the quantizer and the decoder). */
  readonly latentDim: number;
  /** Quantizer down/up-sampling factors between latent rows and frames (causal conv k=s=f, ConvNeXt after each). */
  readonly quantizerFactors: readonly number[];
  /** Hidden width of the ConvNeXt blocks' pointwise MLP. */
  readonly convNextHidden: number;
  readonly postModule: CodecTransformerConfig;
  readonly preModule: CodecTransformerConfig;
  /** Width after the decoder's first conv; halves in each decoder block. */
  readonly decoderDim: number;
  readonly decoderRates: readonly number[];
  /** Width of the encoder's first conv; doubles in each encoder block. */
  readonly encoderDim: number;
  readonly encoderStrides: readonly number[];
  /** Transformer in the last encoder block; its dim is encoderDim × 2^blocks. */
  readonly encoderTransformer: CodecTransformerConfig;
}

const POST_MODULE_REAL: CodecTransformerConfig = {
  layers: 8,
  dim: 1024,
  heads: 16,
  headDim: 64,
  intermediate: 3072,
  window: 128,
  ropeBase: 10000,
  normEps: 1e-5,
};

export const REAL_CODEC_CONFIG: CodecConfig = {
  sampleRate: SAMPLE_RATE,
  frameLength: SAMPLES_PER_FRAME,
  semanticCodebookSize: SEMANTIC_CODEBOOK_SIZE,
  residualCodebooks: CODES_PER_FRAME - 1,
  residualCodebookSize: RESIDUAL_CODEBOOK_SIZE,
  codebookDim: 8,
  latentDim: 1024,
  quantizerFactors: [2, 2],
  convNextHidden: 4096,
  postModule: POST_MODULE_REAL,
  preModule: POST_MODULE_REAL,
  decoderDim: 1536,
  decoderRates: [8, 8, 4, 2],
  encoderDim: 64,
  encoderStrides: [2, 4, 8, 8],
  encoderTransformer: { ...POST_MODULE_REAL, layers: 4, intermediate: 3072, window: 512 },
};

const TINY_TRANSFORMER: CodecTransformerConfig = {
  layers: 2,
  dim: 64,
  heads: 2,
  headDim: 32,
  intermediate: 192,
  window: 16,
  ropeBase: 10000,
  normEps: 1e-5,
};

/** Same rates, codebooks and 2048-sample frames as the real codec; channels and windows scaled down. */
export const TINY_CODEC_CONFIG: CodecConfig = {
  ...REAL_CODEC_CONFIG,
  latentDim: 64,
  convNextHidden: 256,
  postModule: TINY_TRANSFORMER,
  preModule: TINY_TRANSFORMER,
  decoderDim: 64,
  encoderDim: 4,
  encoderTransformer: { ...TINY_TRANSFORMER, window: 64 },
};

function product(values: readonly number[]): number {
  return values.reduce((total, value) => total * value, 1);
}

function refuse(code: string, field: string, message: string, source: string): never {
  throw new DramaError(code, `${source}: codec_config.${field} ${message}`, {
    kind: 'bad_checkpoint',
    param: `codec_config.${field}`,
  });
}

type JsonObject = Record<string, unknown>;

function readObject(value: unknown, field: string, source: string): JsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    refuse('CODEC_CONFIG_NOT_OBJECT', field, 'must be an object', source);
  }
  return value as JsonObject;
}

function readInteger(object: JsonObject, key: string, field: string, source: string, minimum = 1): number {
  const value = object[key];
  if (value === undefined) refuse('CODEC_CONFIG_MISSING_FIELD', field, 'is missing', source);
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum) {
    refuse('CODEC_CONFIG_BAD_VALUE', field, `must be an integer >= ${minimum}, got ${JSON.stringify(value)}`, source);
  }
  return value;
}

function readPositive(object: JsonObject, key: string, field: string, source: string): number {
  const value = object[key];
  if (value === undefined) refuse('CODEC_CONFIG_MISSING_FIELD', field, 'is missing', source);
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    refuse('CODEC_CONFIG_BAD_VALUE', field, `must be a positive number, got ${JSON.stringify(value)}`, source);
  }
  return value;
}

function readIntegerList(object: JsonObject, key: string, field: string, source: string): number[] {
  const value = object[key];
  if (value === undefined) refuse('CODEC_CONFIG_MISSING_FIELD', field, 'is missing', source);
  if (!Array.isArray(value) || value.length === 0) {
    refuse(
      'CODEC_CONFIG_BAD_VALUE',
      field,
      `must be a non-empty list of integers, got ${JSON.stringify(value)}`,
      source,
    );
  }
  return value.map((_, index) =>
    readInteger(value as unknown as JsonObject, String(index), `${field}[${index}]`, source),
  );
}

function parseTransformer(value: unknown, field: string, source: string): CodecTransformerConfig {
  const object = readObject(value, field, source);
  const config: CodecTransformerConfig = {
    layers: readInteger(object, 'n_layer', `${field}.n_layer`, source, 0),
    dim: readInteger(object, 'dim', `${field}.dim`, source),
    heads: readInteger(object, 'n_head', `${field}.n_head`, source),
    headDim: readInteger(object, 'head_dim', `${field}.head_dim`, source),
    intermediate: readInteger(object, 'intermediate_size', `${field}.intermediate_size`, source),
    window: readInteger(object, 'window_size', `${field}.window_size`, source),
    ropeBase: readPositive(object, 'rope_base', `${field}.rope_base`, source),
    normEps: readPositive(object, 'norm_eps', `${field}.norm_eps`, source),
  };
  if (config.headDim % 2 !== 0) {
    refuse('CODEC_CONFIG_BAD_VALUE', `${field}.head_dim`, `must be even for RoPE pairs, got ${config.headDim}`, source);
  }
  return config;
}

/** Checks the relations between fields: widths that must meet and rates that must multiply to the frame length. */
function checkConsistency(config: CodecConfig, source: string): void {
  const factors = product(config.quantizerFactors);
  const rates = { decoder_rates: config.decoderRates, encoder_rates: config.encoderStrides };
  for (const [field, fieldRates] of Object.entries(rates)) {
    const hop = product(fieldRates);
    if (hop * factors !== config.frameLength) {
      refuse(
        'CODEC_CONFIG_RATES_MISMATCH',
        field,
        `multiply to ${hop}, times downsample_factor ${factors} is ${hop * factors}, not frame_length ${config.frameLength}`,
        source,
      );
    }
  }
  const decoderBlocks = 2 ** config.decoderRates.length;
  if (config.decoderDim % decoderBlocks !== 0) {
    refuse(
      'CODEC_CONFIG_BAD_VALUE',
      'decoder_dim',
      `${config.decoderDim} must be divisible by 2^${config.decoderRates.length} (it halves in each decoder block)`,
      source,
    );
  }
  for (const [field, transformer] of [
    ['post_module', config.postModule],
    ['pre_module', config.preModule],
  ] as const) {
    if (transformer.dim !== config.latentDim) {
      refuse(
        'CODEC_CONFIG_BAD_VALUE',
        `${field}.dim`,
        `${transformer.dim} must equal latent_dim ${config.latentDim}`,
        source,
      );
    }
  }
  const encoderWidth = config.encoderDim * 2 ** config.encoderStrides.length;
  if (config.encoderTransformer.dim !== encoderWidth) {
    refuse(
      'CODEC_CONFIG_BAD_VALUE',
      'encoder_transformer.dim',
      `${config.encoderTransformer.dim} must equal encoder_dim × 2^${config.encoderStrides.length} = ${encoderWidth}`,
      source,
    );
  }
}

/**
 * Parses the `codec_config` object of a checkpoint's config.json (undefined → the real codec). `source` names the
 * file in messages; refusals carry `param` = the field path (e.g. `codec_config.decoder_rates[2]`).
 */
export function parseCodecConfig(json: unknown, source: string): CodecConfig {
  if (json === undefined || json === null) return REAL_CODEC_CONFIG;
  const root = readObject(json, '', source);
  const config: CodecConfig = {
    sampleRate: readInteger(root, 'sample_rate', 'sample_rate', source),
    frameLength: readInteger(root, 'frame_length', 'frame_length', source),
    semanticCodebookSize: readInteger(root, 'semantic_codebook_size', 'semantic_codebook_size', source),
    residualCodebooks: readInteger(root, 'n_codebooks', 'n_codebooks', source),
    residualCodebookSize: readInteger(root, 'codebook_size', 'codebook_size', source),
    codebookDim: readInteger(root, 'codebook_dim', 'codebook_dim', source),
    latentDim: readInteger(root, 'latent_dim', 'latent_dim', source),
    quantizerFactors: readIntegerList(root, 'downsample_factor', 'downsample_factor', source),
    convNextHidden: readInteger(root, 'convnext_hidden_dim', 'convnext_hidden_dim', source),
    postModule: parseTransformer(root.post_module, 'post_module', source),
    preModule: parseTransformer(root.pre_module, 'pre_module', source),
    decoderDim: readInteger(root, 'decoder_dim', 'decoder_dim', source),
    decoderRates: readIntegerList(root, 'decoder_rates', 'decoder_rates', source),
    encoderDim: readInteger(root, 'encoder_dim', 'encoder_dim', source),
    encoderStrides: readIntegerList(root, 'encoder_rates', 'encoder_rates', source),
    encoderTransformer: parseTransformer(root.encoder_transformer, 'encoder_transformer', source),
  };
  checkConsistency(config, source);
  return config;
}

function transformerToJson(config: CodecTransformerConfig): JsonObject {
  return {
    n_layer: config.layers,
    dim: config.dim,
    n_head: config.heads,
    head_dim: config.headDim,
    intermediate_size: config.intermediate,
    window_size: config.window,
    rope_base: config.ropeBase,
    norm_eps: config.normEps,
  };
}

/** The `codec_config` object that `parseCodecConfig` reads back to `config` (what `synth` writes). */
export function codecConfigToJson(config: CodecConfig): JsonObject {
  return {
    sample_rate: config.sampleRate,
    frame_length: config.frameLength,
    semantic_codebook_size: config.semanticCodebookSize,
    n_codebooks: config.residualCodebooks,
    codebook_size: config.residualCodebookSize,
    codebook_dim: config.codebookDim,
    latent_dim: config.latentDim,
    downsample_factor: [...config.quantizerFactors],
    convnext_hidden_dim: config.convNextHidden,
    post_module: transformerToJson(config.postModule),
    pre_module: transformerToJson(config.preModule),
    decoder_dim: config.decoderDim,
    decoder_rates: [...config.decoderRates],
    encoder_dim: config.encoderDim,
    encoder_rates: [...config.encoderStrides],
    encoder_transformer: transformerToJson(config.encoderTransformer),
  };
}
