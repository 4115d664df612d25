// The model's hyper-parameters in camelCase (MODEL.md §1–§3), with the values every consumer would otherwise derive
// (rotary dims, GDN conv channels, layer index lists). `makeTextConfig` / `makeTowerConfig` / `makeAudioConfig` derive
// them and check the structural assumptions, so that presets and parsed files go through the same checks.
import type { CodecConfig } from '../codec/config.ts';
import { type AudioFieldPaths, RELEASE_PATHS, ROOT, TEXT } from './config-keys.ts';
import { configError } from './config-read.ts';

export type LayerType = 'linear_attention' | 'full_attention';
export const LAYER_TYPES: readonly LayerType[] = ['linear_attention', 'full_attention'];

/** The backbone (transformers `qwen3_5_moe` text config). */
export interface TextConfigFields {
  readonly hiddenSize: number;
  readonly layerTypes: readonly LayerType[];
  readonly attentionHeads: number;
  readonly keyValueHeads: number;
  readonly headDim: number;
  readonly ropeTheta: number;
  /** Fraction of each head's dims that RoPE rotates (NeoX rotate-half over the first rotaryDim dims). */
  readonly partialRotaryFactor: number;
  readonly linearKeyHeads: number;
  readonly linearValueHeads: number;
  readonly linearKeyHeadDim: number;
  readonly linearValueHeadDim: number;
  readonly linearConvKernel: number;
  readonly experts: number;
  readonly expertsPerToken: number;
  /** SwiGLU width of each routed expert. */
  readonly expertIntermediate: number;
  readonly sharedExpertIntermediate: number;
  readonly rmsNormEps: number;
  readonly maxPositions: number;
  readonly vocabSize: number;
  readonly tieWordEmbeddings: boolean;
  /** transformers' `eos_token_id` (an id or a list; [] when absent). */
  readonly eosTokenIds: readonly number[];
}

export interface TextConfig extends TextConfigFields {
  readonly layers: number;
  readonly rotaryDim: number;
  readonly fullAttentionLayers: readonly number[];
  readonly linearAttentionLayers: readonly number[];
  /** Query heads per KV head (GQA group). */
  readonly queryGroups: number;
  /** q_proj rows: per head [query headDim | gate headDim]. */
  readonly queryProjectionRows: number;
  /** Kh·Kd: width of q and of k in the GDN. */
  readonly linearKeyDim: number;
  /** Vh·Vd: width of v, z and the GDN output. */
  readonly linearValueDim: number;
  /** Channels of the GDN depthwise conv: q | k | v = 2·Kh·Kd + Vh·Vd. */
  readonly linearConvChannels: number;
  /** Value heads served by each key head. */
  readonly linearValueHeadsPerKeyHead: number;
}

/** The codebook tower ("codebook-MTP"): shared layers then one layer per residual codebook. */
export interface TowerConfigFields {
  readonly sharedLayers: number;
  readonly codebookLayers: number;
  readonly hiddenSize: number;
  readonly attentionHeads: number;
  readonly keyValueHeads: number;
  readonly headDim: number;
  readonly intermediate: number;
  readonly ropeTheta: number;
  readonly rotaryDim: number;
  readonly ropeStyle: 'interleaved' | 'neox';
  readonly rmsNormEps: number;
}

export interface TowerConfig extends TowerConfigFields {
  readonly layers: number;
  readonly queryGroups: number;
}

export interface AudioConfigFields {
  /** Codebooks per frame: 1 semantic + residual ones. */
  readonly codebooks: number;
  readonly semanticCodebookSize: number;
  /** Entries of each residual codebook. */
  readonly codebookSize: number;
  /** Which codebook's embedding the frame-row formula adds to E_text[main] (MODEL.md §1 guess). */
  readonly frameEmbeddingCodebook: number;
}

export interface AudioConfig extends AudioConfigFields {
  /** Rows of every codebook embedding table: semantic rows then each residual codebook's rows. */
  readonly codebookEmbeddingRows: number;
}

export interface QuantizationConfig {
  readonly method: 'fp8';
  readonly format: 'e4m3';
  /** [rows, cols] of one scale block. */
  readonly blockSize: readonly [number, number];
  readonly activationScheme: 'dynamic';
  /** Module names the file says stay unquantised (informative; the weight map decides per tensor). */
  readonly modulesToNotConvert: readonly string[];
}

/** Ids of Drama's structural tokens as config.json states them (optional: the tokenizer is the authority). */
export interface SpecialTokenIds {
  readonly imStart: number | undefined;
  readonly imEnd: number | undefined;
  readonly voice: number | undefined;
  readonly text: number | undefined;
  readonly interleave: number | undefined;
  /** Id of `<|semantic:0|>`; the semantic ids are contiguous from here. */
  readonly semanticBegin: number | undefined;
  /** Id of `<|speaker:0|>`. */
  readonly speakerBegin: number | undefined;
}

export interface Drama3Config {
  readonly text: TextConfig;
  readonly tower: TowerConfig;
  readonly audio: AudioConfig;
  readonly codec: CodecConfig;
  /** Block-FP8 experts when present; undefined when the experts are bf16. */
  readonly quantization: QuantizationConfig | undefined;
  readonly specialTokens: SpecialTokenIds;
  /** True only for checkpoints our `synth` wrote: random weights that speak noise. */
  readonly synthetic: boolean;
  readonly promptFormat: string;
}

function requireDivides(divisor: number, value: number, path: string, what: string): void {
  if (value % divisor !== 0) {
    throw configError('CONFIG_HEADS_MISMATCH', path, `${what}: ${divisor} does not divide ${value}`);
  }
}

/** Derives the text config's handy values and checks its structural assumptions. `path` prefixes field names. */
export function makeTextConfig(fields: TextConfigFields, path: string = ROOT.text): TextConfig {
  const rotaryExact = fields.headDim * fields.partialRotaryFactor;
  if (!Number.isInteger(rotaryExact) || rotaryExact % 2 !== 0 || rotaryExact <= 0) {
    throw configError(
      'CONFIG_ROTARY_ODD',
      `${path}.${TEXT.partialRotaryFactor}`,
      `head_dim ${fields.headDim} × ${fields.partialRotaryFactor} = ${rotaryExact} rotary dims; must be a positive even integer`,
    );
  }
  requireDivides(
    fields.keyValueHeads,
    fields.attentionHeads,
    `${path}.${TEXT.keyValueHeads}`,
    'KV heads must divide query heads',
  );
  requireDivides(
    fields.linearKeyHeads,
    fields.linearValueHeads,
    `${path}.${TEXT.linearKeyHeads}`,
    'GDN key heads must divide value heads',
  );
  if (fields.expertsPerToken > fields.experts) {
    throw configError(
      'CONFIG_TOP_K_EXCEEDS_EXPERTS',
      `${path}.${TEXT.expertsPerToken}`,
      `${fields.expertsPerToken} is more than num_experts ${fields.experts}`,
    );
  }
  fields.eosTokenIds.forEach((id, index) => {
    if (id >= fields.vocabSize) {
      throw configError(
        'CONFIG_ID_OUT_OF_VOCAB',
        `${path}.${TEXT.eos}[${index}]`,
        `${id} >= vocab_size ${fields.vocabSize}`,
      );
    }
  });
  const linearKeyDim = fields.linearKeyHeads * fields.linearKeyHeadDim;
  const linearValueDim = fields.linearValueHeads * fields.linearValueHeadDim;
  const indices = (type: LayerType) => fields.layerTypes.flatMap((value, index) => (value === type ? [index] : []));
  return {
    ...fields,
    layers: fields.layerTypes.length,
    rotaryDim: rotaryExact,
    fullAttentionLayers: indices('full_attention'),
    linearAttentionLayers: indices('linear_attention'),
    queryGroups: fields.attentionHeads / fields.keyValueHeads,
    queryProjectionRows: fields.attentionHeads * fields.headDim * 2,
    linearKeyDim,
    linearValueDim,
    linearConvChannels: 2 * linearKeyDim + linearValueDim,
    linearValueHeadsPerKeyHead: fields.linearValueHeads / fields.linearKeyHeads,
  };
}

/** Derives the tower's handy values and checks it; `paths` name the fields in refusals (per config layout). */
export function makeTowerConfig(fields: TowerConfigFields, paths: AudioFieldPaths = RELEASE_PATHS): TowerConfig {
  requireDivides(fields.keyValueHeads, fields.attentionHeads, paths.keyValueHeads, 'KV heads must divide query heads');
  if (fields.rotaryDim % 2 !== 0 || fields.rotaryDim <= 0 || fields.rotaryDim > fields.headDim) {
    throw configError(
      'CONFIG_ROTARY_ODD',
      paths.rotary,
      `${fields.rotaryDim} rotary dims must be a positive even number, at most head_dim ${fields.headDim}`,
    );
  }
  return {
    ...fields,
    layers: fields.sharedLayers + fields.codebookLayers,
    queryGroups: fields.attentionHeads / fields.keyValueHeads,
  };
}

export function makeAudioConfig(fields: AudioConfigFields, paths: AudioFieldPaths = RELEASE_PATHS): AudioConfig {
  if (fields.frameEmbeddingCodebook >= fields.codebooks) {
    throw configError(
      'CONFIG_OUT_OF_RANGE',
      paths.frameEmbeddingCodebook,
      `${fields.frameEmbeddingCodebook} must be below num_codebooks ${fields.codebooks}`,
    );
  }
  return {
    ...fields,
    codebookEmbeddingRows: fields.semanticCodebookSize + (fields.codebooks - 1) * fields.codebookSize,
  };
}

/** Row of codebook `codebook`'s code `code` in a codebook embedding table (semantic rows first). */
export function codebookEmbeddingRow(audio: AudioConfigFields, codebook: number, code: number): number {
  return codebook === 0 ? code : audio.semanticCodebookSize + (codebook - 1) * audio.codebookSize + code;
}

/** Checks that the parts agree with each other: tower per codebook, audio against the codec. */
export function checkAgreement(
  text: TextConfig,
  tower: TowerConfig,
  audio: AudioConfig,
  codec: CodecConfig,
  paths: AudioFieldPaths,
): void {
  if (tower.codebookLayers !== audio.codebooks - 1) {
    throw configError(
      'CONFIG_PARTS_DISAGREE',
      paths.codebookLayers,
      `${tower.codebookLayers} must be num_codebooks - 1 = ${audio.codebooks - 1}`,
    );
  }
  const pairs: [string, number, number][] = [
    [paths.semanticCodebookSize, audio.semanticCodebookSize, codec.semanticCodebookSize],
    [paths.codebookSize, audio.codebookSize, codec.residualCodebookSize],
    [paths.codebooks, audio.codebooks, codec.residualCodebooks + 1],
  ];
  for (const [path, value, codecValue] of pairs) {
    if (value !== codecValue) {
      throw configError('CONFIG_PARTS_DISAGREE', path, `${value} disagrees with the codec config's ${codecValue}`);
    }
  }
  if (text.vocabSize < audio.semanticCodebookSize + 1) {
    throw configError(
      'CONFIG_OUT_OF_RANGE',
      `${ROOT.text}.${TEXT.vocabSize}`,
      `${text.vocabSize} cannot hold ${audio.semanticCodebookSize} semantic tokens`,
    );
  }
}
