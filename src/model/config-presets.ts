// The geometries `synth` writes (MODEL.md §8): `tiny` (every structure at toy width, runs on the CPU), `small` (toy
// width and depth with the real head dims, so the CUDA kernels can run it) and `full` (the real geometry of MODEL.md
// §2, with the tower dims of the §3 guess). The codec part comes from
// src/codec/config.ts (TINY_CODEC_CONFIG / REAL_CODEC_CONFIG).
import {
  type AudioConfig,
  type LayerType,
  makeAudioConfig,
  makeTextConfig,
  makeTowerConfig,
  type QuantizationConfig,
  type TextConfig,
  type TowerConfig,
} from './config-types.ts';

export interface ModelPreset {
  readonly text: TextConfig;
  readonly tower: TowerConfig;
  readonly audio: AudioConfig;
}

/**
 * Size of the synthetic tokenizer (the Qwen3 tokenizer plus Drama's added tokens) rounded up to a multiple of 64.
 * `synth` recomputes it from the tokenizer it writes and refuses to run if the two disagree.
 */
export const SYNTHETIC_VOCAB_SIZE = 155840;

/** The FP8 form `synth` writes the routed experts in: e4m3 values with 128×128 block scales. */
export const FP8_BLOCK_QUANTIZATION: QuantizationConfig = {
  method: 'fp8',
  format: 'e4m3',
  blockSize: [128, 128],
  activationScheme: 'dynamic',
  modulesToNotConvert: [],
};

/** Rounds a tokenizer size up to the next multiple of 64 (the padded vocabulary the embedding tables use). */
export function paddedVocabSize(tokenizerSize: number): number {
  return Math.ceil(tokenizerSize / 64) * 64;
}

/** `[linear ×3, full] × groups`: the 3:1 hybrid pattern. */
export function hybridLayerTypes(layers: number): LayerType[] {
  return Array.from({ length: layers }, (_, index) => ((index + 1) % 4 === 0 ? 'full_attention' : 'linear_attention'));
}

/** Which residual codebook's embedding joins E_text[main] in a frame row (MODEL.md §1: "cb1"). */
const FRAME_EMBEDDING_CODEBOOK = 1;

const AUDIO = makeAudioConfig({
  codebooks: 10,
  semanticCodebookSize: 4096,
  codebookSize: 1024,
  frameEmbeddingCodebook: FRAME_EMBEDDING_CODEBOOK,
});

export const FULL_PRESET: ModelPreset = {
  text: makeTextConfig({
    hiddenSize: 2048,
    layerTypes: hybridLayerTypes(40),
    attentionHeads: 16,
    keyValueHeads: 2,
    headDim: 256,
    ropeTheta: 10_000_000,
    partialRotaryFactor: 0.25,
    linearKeyHeads: 16,
    linearValueHeads: 32,
    linearKeyHeadDim: 128,
    linearValueHeadDim: 128,
    linearConvKernel: 4,
    experts: 256,
    expertsPerToken: 8,
    expertIntermediate: 512,
    sharedExpertIntermediate: 512,
    rmsNormEps: 1e-6,
    maxPositions: 262144,
    vocabSize: SYNTHETIC_VOCAB_SIZE,
    tieWordEmbeddings: false,
    eosTokenIds: [],
  }),
  tower: makeTowerConfig({
    sharedLayers: 4,
    codebookLayers: 9,
    hiddenSize: 2048,
    attentionHeads: 16,
    keyValueHeads: 2,
    headDim: 256,
    intermediate: 6144,
    ropeTheta: 10_000_000,
    rotaryDim: 64,
    ropeStyle: 'interleaved',
    rmsNormEps: 1e-6,
  }),
  audio: AUDIO,
};

export const TINY_PRESET: ModelPreset = {
  text: makeTextConfig({
    ...FULL_PRESET.text,
    hiddenSize: 64,
    layerTypes: hybridLayerTypes(8),
    attentionHeads: 4,
    keyValueHeads: 2,
    headDim: 16,
    linearKeyHeads: 2,
    linearValueHeads: 4,
    linearKeyHeadDim: 16,
    linearValueHeadDim: 16,
    experts: 8,
    expertsPerToken: 2,
    expertIntermediate: 32,
    sharedExpertIntermediate: 32,
  }),
  tower: makeTowerConfig({
    ...FULL_PRESET.tower,
    hiddenSize: 64,
    attentionHeads: 4,
    keyValueHeads: 2,
    headDim: 16,
    intermediate: 128,
    rotaryDim: 8,
  }),
  audio: AUDIO,
};

/** Few, narrow layers with the full geometry's head dims (attention 256, DeltaNet 128, FP8 blocks of 128). */
export const SMALL_PRESET: ModelPreset = {
  text: makeTextConfig({
    ...FULL_PRESET.text,
    hiddenSize: 256,
    layerTypes: hybridLayerTypes(4),
    attentionHeads: 8,
    keyValueHeads: 1,
    headDim: 256,
    partialRotaryFactor: 0.25,
    linearKeyHeads: 2,
    linearValueHeads: 4,
    linearKeyHeadDim: 128,
    linearValueHeadDim: 128,
    linearConvKernel: 4,
    experts: 16,
    expertsPerToken: 8,
    expertIntermediate: 128,
    sharedExpertIntermediate: 128,
  }),
  tower: makeTowerConfig({
    ...FULL_PRESET.tower,
    hiddenSize: 256,
    attentionHeads: 8,
    keyValueHeads: 1,
    headDim: 256,
    intermediate: 512,
    rotaryDim: 64,
    ropeStyle: 'interleaved',
  }),
  audio: AUDIO,
};
