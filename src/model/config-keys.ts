// Every key name of config.json, in one place. The release layout (MODEL.md §3: `FishOmniModel`, the tower under
// `audio_decoder_config` with the keys a public engine reads, semantic ids at the top level) is the one we write;
// the earlier layout (`tower_config` + `audio_config`) is still read so that checkpoints written before load.

export const RELEASE_MODEL_TYPE = 'fish_omni';
export const RELEASE_ARCHITECTURE = 'FishOmniModel';
/** model_type values of the earlier layout (`drama3` when absent). */
export const EARLIER_MODEL_TYPES = ['drama3', 'qwen3_5_moe'] as const;

/** Top-level keys. */
export const ROOT = {
  modelType: 'model_type',
  architectures: 'architectures',
  text: 'text_config',
  audioDecoder: 'audio_decoder_config',
  semanticStart: 'semantic_start_token_id',
  semanticEnd: 'semantic_end_token_id',
  eos: 'eos_token_id',
  pad: 'pad_token_id',
  audioPad: 'audio_pad_token_id',
  codec: 'codec_config',
  quantization: 'quantization_config',
  specialTokens: 'special_token_ids',
  synthetic: 'synthetic',
  promptFormat: 'prompt_format',
  earlierTower: 'tower_config',
  earlierAudio: 'audio_config',
} as const;

/** Top-level keys that carry no meaning for inference. */
export const IGNORED_ROOT_KEYS = ['transformers_version', 'dtype', 'torch_dtype', 'tie_word_embeddings'];

/** `text_config`: the backbone, as transformers writes a qwen3_5_moe text config. */
export const TEXT = {
  hiddenSize: 'hidden_size',
  layers: 'num_hidden_layers',
  layerTypes: 'layer_types',
  fullAttentionInterval: 'full_attention_interval',
  heads: 'num_attention_heads',
  keyValueHeads: 'num_key_value_heads',
  headDim: 'head_dim',
  ropeParameters: 'rope_parameters',
  ropeType: 'rope_type',
  ropeTheta: 'rope_theta',
  partialRotaryFactor: 'partial_rotary_factor',
  linearKeyHeads: 'linear_num_key_heads',
  linearValueHeads: 'linear_num_value_heads',
  linearKeyHeadDim: 'linear_key_head_dim',
  linearValueHeadDim: 'linear_value_head_dim',
  linearConvKernel: 'linear_conv_kernel_dim',
  experts: 'num_experts',
  expertsPerToken: 'num_experts_per_tok',
  expertIntermediate: 'moe_intermediate_size',
  sharedExpertIntermediate: 'shared_expert_intermediate_size',
  rmsNormEps: 'rms_norm_eps',
  maxPositions: 'max_position_embeddings',
  vocabSize: 'vocab_size',
  tieWordEmbeddings: 'tie_word_embeddings',
  eos: 'eos_token_id',
} as const;

/** Keys transformers writes that carry no meaning for inference. */
export const IGNORED_TEXT_KEYS = [
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

/** text_config keys whose value must be the one the engine implements. */
export const FIXED_TEXT_VALUES: readonly (readonly [string, unknown])[] = [
  ['hidden_act', 'silu'],
  ['attention_bias', false],
  ['attn_output_gate', true],
  ['norm_topk_prob', true],
  ['decoder_sparse_step', 1],
  ['mlp_only_layers', []],
];

/** Text-only rows share one position on all three M-RoPE sections, which is plain 1-D RoPE: these do not matter. */
export const IGNORED_ROPE_KEYS = ['mrope_section', 'mrope_interleaved'];

/** `quantization_config`: block-FP8 experts. */
export const QUANTIZATION = {
  method: 'quant_method',
  format: 'fmt',
  blockSize: 'weight_block_size',
  activationScheme: 'activation_scheme',
  modulesToNotConvert: 'modules_to_not_convert',
  ignoredLayers: 'ignored_layers',
} as const;

/** `audio_decoder_config` (release layout): the tower and the codebooks. */
export const AUDIO_DECODER = {
  dim: 'dim',
  heads: 'n_head',
  keyValueHeads: 'n_local_heads',
  headDim: 'head_dim',
  intermediate: 'intermediate_size',
  normEps: 'norm_eps',
  codebooks: 'num_codebooks',
  /** Entries of each residual codebook: the size of each per-codebook head. */
  vocabSize: 'vocab_size',
  sharedLayers: 'shared_enrichment_layers',
  ropeBase: 'rope_base',
  rotaryPercent: 'rotary_percent',
  backboneCodebooks: 'vq_backbone_codebooks',
  /** Optional: the tower's layer count when it is not shared_enrichment_layers + num_codebooks − 1. */
  layers: 'n_layer',
  /** Ours, optional: `interleaved` (the default, MODEL.md §3) or `neox`. */
  ropeStyle: 'rope_style',
  /** Ours, optional: the codebook whose embedding joins E_text[main] in a frame row (default 1, MODEL.md §1). */
  frameEmbeddingCodebook: 'frame_embedding_codebook',
} as const;

/** `tower_config` (earlier layout). */
export const EARLIER_TOWER = {
  sharedLayers: 'num_shared_layers',
  codebookLayers: 'num_codebook_layers',
  hiddenSize: 'hidden_size',
  heads: 'num_attention_heads',
  keyValueHeads: 'num_key_value_heads',
  headDim: 'head_dim',
  intermediate: 'intermediate_size',
  ropeTheta: 'rope_theta',
  rotaryDim: 'rotary_dim',
  ropeStyle: 'rope_style',
  rmsNormEps: 'rms_norm_eps',
} as const;

/** `audio_config` (earlier layout). */
export const EARLIER_AUDIO = {
  codebooks: 'num_codebooks',
  semanticCodebookSize: 'semantic_codebook_size',
  codebookSize: 'codebook_size',
  frameEmbeddingCodebook: 'frame_embedding_codebook',
} as const;

/** `special_token_ids`: Drama's structural tokens (ours; the tokenizer is the authority). */
export const SPECIAL_TOKENS = {
  imStart: 'im_start',
  imEnd: 'im_end',
  voice: 'voice',
  text: 'text',
  interleave: 'interleave',
  semanticBegin: 'semantic_begin',
  speakerBegin: 'speaker_begin',
} as const;

/** Where a refusal about the tower and codebooks points, in each layout. */
export interface AudioFieldPaths {
  readonly keyValueHeads: string;
  readonly rotary: string;
  readonly codebookLayers: string;
  readonly codebooks: string;
  readonly semanticCodebookSize: string;
  readonly codebookSize: string;
  readonly frameEmbeddingCodebook: string;
}

const decoder = (key: string) => `${ROOT.audioDecoder}.${key}`;

export const RELEASE_PATHS: AudioFieldPaths = {
  keyValueHeads: decoder(AUDIO_DECODER.keyValueHeads),
  rotary: decoder(AUDIO_DECODER.rotaryPercent),
  codebookLayers: decoder(AUDIO_DECODER.layers),
  codebooks: decoder(AUDIO_DECODER.codebooks),
  semanticCodebookSize: ROOT.semanticEnd,
  codebookSize: decoder(AUDIO_DECODER.vocabSize),
  frameEmbeddingCodebook: decoder(AUDIO_DECODER.frameEmbeddingCodebook),
};

export const EARLIER_PATHS: AudioFieldPaths = {
  keyValueHeads: `${ROOT.earlierTower}.${EARLIER_TOWER.keyValueHeads}`,
  rotary: `${ROOT.earlierTower}.${EARLIER_TOWER.rotaryDim}`,
  codebookLayers: `${ROOT.earlierTower}.${EARLIER_TOWER.codebookLayers}`,
  codebooks: `${ROOT.earlierAudio}.${EARLIER_AUDIO.codebooks}`,
  semanticCodebookSize: `${ROOT.earlierAudio}.${EARLIER_AUDIO.semanticCodebookSize}`,
  codebookSize: `${ROOT.earlierAudio}.${EARLIER_AUDIO.codebookSize}`,
  frameEmbeddingCodebook: `${ROOT.earlierAudio}.${EARLIER_AUDIO.frameEmbeddingCodebook}`,
};
