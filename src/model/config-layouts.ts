// The tower and codebook part of config.json in its two layouts: the release's `audio_decoder_config` with the
// semantic ids at the top level (read first, and what `configToJson` writes), and the earlier `tower_config` +
// `audio_config` that checkpoints written before still carry.
import type { CodecConfig } from '../codec/config.ts';
import {
  AUDIO_DECODER,
  type AudioFieldPaths,
  EARLIER_AUDIO,
  EARLIER_PATHS,
  EARLIER_TOWER,
  RELEASE_PATHS,
  ROOT,
} from './config-keys.ts';
import { FULL_PRESET } from './config-presets.ts';
import { type ConfigSection, configError } from './config-read.ts';
import { type AudioConfig, makeAudioConfig, makeTowerConfig, type TowerConfig } from './config-types.ts';

/** Which residual codebook's embedding joins E_text[main] when the config does not say (MODEL.md §1: "cb1"). */
const DEFAULT_FRAME_EMBEDDING_CODEBOOK = 1;
const DEFAULT_ROPE_STYLE = 'interleaved';
const ROPE_STYLES = ['interleaved', 'neox'] as const;

export interface AudioPart {
  readonly tower: TowerConfig;
  readonly audio: AudioConfig;
  /** Where refusals about this part point. */
  readonly paths: AudioFieldPaths;
  /** The semantic ids' first id when the config states it (release layout: semantic_start_token_id). */
  readonly semanticBegin: number | undefined;
  /** Sections nothing else reads, for the unknown-key report. */
  readonly sections: readonly ConfigSection[];
  /** Sections absent and filled from the full geometry's guesses. */
  readonly defaulted: readonly string[];
}

/** The release layout: `audio_decoder_config` and the top-level semantic ids. */
export function parseReleaseAudio(root: ConfigSection, codec: CodecConfig, vocabSize: number): AudioPart {
  const section = root.section(ROOT.audioDecoder);
  if (section === undefined) throw configError('CONFIG_MISSING_FIELD', ROOT.audioDecoder, 'is missing');
  const codebooks = section.integer(AUDIO_DECODER.codebooks, { minimum: 2 });
  const sharedLayers = section.integer(AUDIO_DECODER.sharedLayers, { minimum: 0 });
  const layers = section.integer(AUDIO_DECODER.layers, { fallback: sharedLayers + codebooks - 1 });
  if (layers <= sharedLayers) {
    throw configError(
      'CONFIG_OUT_OF_RANGE',
      section.field(AUDIO_DECODER.layers),
      `${layers} leaves no per-codebook layer after ${sharedLayers} shared ones`,
    );
  }
  const headDim = section.integer(AUDIO_DECODER.headDim);
  const rotaryPercent = section.positive(AUDIO_DECODER.rotaryPercent);
  const rotaryDim = rotaryPercent * headDim;
  if (!Number.isInteger(rotaryDim)) {
    throw configError(
      'CONFIG_ROTARY_ODD',
      section.field(AUDIO_DECODER.rotaryPercent),
      `head_dim ${headDim} × ${rotaryPercent} = ${rotaryDim} rotary dims; must be a positive even integer`,
    );
  }
  const backboneCodebooks = section.raw(AUDIO_DECODER.backboneCodebooks);
  if (backboneCodebooks !== undefined) section.integer(AUDIO_DECODER.backboneCodebooks);
  const tower = makeTowerConfig(
    {
      sharedLayers,
      codebookLayers: layers - sharedLayers,
      hiddenSize: section.integer(AUDIO_DECODER.dim),
      attentionHeads: section.integer(AUDIO_DECODER.heads),
      keyValueHeads: section.integer(AUDIO_DECODER.keyValueHeads),
      headDim,
      intermediate: section.integer(AUDIO_DECODER.intermediate),
      ropeTheta: section.positive(AUDIO_DECODER.ropeBase),
      rotaryDim,
      ropeStyle: section.choice(AUDIO_DECODER.ropeStyle, ROPE_STYLES, DEFAULT_ROPE_STYLE),
      rmsNormEps: section.positive(AUDIO_DECODER.normEps, { fallback: 1e-6 }),
    },
    RELEASE_PATHS,
  );
  const semantic = semanticIds(root, vocabSize);
  const audio = makeAudioConfig(
    {
      codebooks,
      semanticCodebookSize: semantic?.count ?? codec.semanticCodebookSize,
      codebookSize: section.integer(AUDIO_DECODER.vocabSize),
      frameEmbeddingCodebook: section.integer(AUDIO_DECODER.frameEmbeddingCodebook, {
        minimum: 0,
        fallback: DEFAULT_FRAME_EMBEDDING_CODEBOOK,
      }),
    },
    RELEASE_PATHS,
  );
  return {
    tower,
    audio,
    paths: RELEASE_PATHS,
    semanticBegin: semantic?.begin,
    sections: [section],
    defaulted: [],
  };
}

/** semantic_start_token_id..semantic_end_token_id (both or neither); absent → the codec's semantic codebook. */
function semanticIds(root: ConfigSection, vocabSize: number): { begin: number; count: number } | undefined {
  const start = root.tokenId(ROOT.semanticStart);
  const end = root.tokenId(ROOT.semanticEnd);
  if (start === undefined && end === undefined) return undefined;
  if (start === undefined || end === undefined) {
    const missing = start === undefined ? ROOT.semanticStart : ROOT.semanticEnd;
    throw configError(
      'CONFIG_MISSING_FIELD',
      missing,
      `is missing (${ROOT.semanticStart} and ${ROOT.semanticEnd} go together)`,
    );
  }
  if (end < start) {
    throw configError('CONFIG_OUT_OF_RANGE', ROOT.semanticEnd, `${end} is below ${ROOT.semanticStart} ${start}`);
  }
  if (end >= vocabSize)
    throw configError('CONFIG_ID_OUT_OF_VOCAB', ROOT.semanticEnd, `${end} >= vocab_size ${vocabSize}`);
  return { begin: start, count: end - start + 1 };
}

/** The earlier layout: `tower_config` and `audio_config`, each filled from the full guesses when absent. */
export function parseEarlierAudio(root: ConfigSection): AudioPart {
  const towerSection = root.section(ROOT.earlierTower);
  const audioSection = root.section(ROOT.earlierAudio);
  const tower =
    towerSection === undefined
      ? FULL_PRESET.tower
      : makeTowerConfig(
          {
            sharedLayers: towerSection.integer(EARLIER_TOWER.sharedLayers, { minimum: 0 }),
            codebookLayers: towerSection.integer(EARLIER_TOWER.codebookLayers),
            hiddenSize: towerSection.integer(EARLIER_TOWER.hiddenSize),
            attentionHeads: towerSection.integer(EARLIER_TOWER.heads),
            keyValueHeads: towerSection.integer(EARLIER_TOWER.keyValueHeads),
            headDim: towerSection.integer(EARLIER_TOWER.headDim),
            intermediate: towerSection.integer(EARLIER_TOWER.intermediate),
            ropeTheta: towerSection.positive(EARLIER_TOWER.ropeTheta),
            rotaryDim: towerSection.integer(EARLIER_TOWER.rotaryDim),
            ropeStyle: towerSection.choice(EARLIER_TOWER.ropeStyle, ROPE_STYLES),
            rmsNormEps: towerSection.positive(EARLIER_TOWER.rmsNormEps, { fallback: 1e-6 }),
          },
          EARLIER_PATHS,
        );
  const audio =
    audioSection === undefined
      ? FULL_PRESET.audio
      : makeAudioConfig(
          {
            codebooks: audioSection.integer(EARLIER_AUDIO.codebooks, { minimum: 2 }),
            semanticCodebookSize: audioSection.integer(EARLIER_AUDIO.semanticCodebookSize),
            codebookSize: audioSection.integer(EARLIER_AUDIO.codebookSize),
            frameEmbeddingCodebook: audioSection.integer(EARLIER_AUDIO.frameEmbeddingCodebook, { minimum: 0 }),
          },
          EARLIER_PATHS,
        );
  return {
    tower,
    audio,
    paths: EARLIER_PATHS,
    semanticBegin: undefined,
    sections: [towerSection, audioSection].filter((section) => section !== undefined),
    defaulted: [
      ...(towerSection === undefined ? [ROOT.earlierTower] : []),
      ...(audioSection === undefined ? [ROOT.earlierAudio] : []),
    ],
  };
}

/** The release layout's tower and codebook keys for `tower` and `audio` (top-level semantic ids written apart). */
export function audioDecoderToJson(tower: TowerConfig, audio: AudioConfig): Record<string, unknown> {
  return {
    [AUDIO_DECODER.dim]: tower.hiddenSize,
    [AUDIO_DECODER.heads]: tower.attentionHeads,
    [AUDIO_DECODER.keyValueHeads]: tower.keyValueHeads,
    [AUDIO_DECODER.headDim]: tower.headDim,
    [AUDIO_DECODER.intermediate]: tower.intermediate,
    [AUDIO_DECODER.normEps]: tower.rmsNormEps,
    [AUDIO_DECODER.codebooks]: audio.codebooks,
    [AUDIO_DECODER.vocabSize]: audio.codebookSize,
    [AUDIO_DECODER.sharedLayers]: tower.sharedLayers,
    [AUDIO_DECODER.ropeBase]: tower.ropeTheta,
    [AUDIO_DECODER.rotaryPercent]: tower.rotaryDim / tower.headDim,
    ...(tower.layers === tower.sharedLayers + audio.codebooks - 1 ? {} : { [AUDIO_DECODER.layers]: tower.layers }),
    ...(tower.ropeStyle === DEFAULT_ROPE_STYLE ? {} : { [AUDIO_DECODER.ropeStyle]: tower.ropeStyle }),
    ...(audio.frameEmbeddingCodebook === DEFAULT_FRAME_EMBEDDING_CODEBOOK
      ? {}
      : { [AUDIO_DECODER.frameEmbeddingCodebook]: audio.frameEmbeddingCodebook }),
  };
}
