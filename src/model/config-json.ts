// config.json (snake_case, as Hugging Face writes it) ⇄ Drama3Config. Every field is checked by kind and refused by
// name with its path; keys we do not know are collected and reported once, never fatal. `configToJson` writes the
// release layout (config-keys.ts), which `parseConfig` reads back to the same config; the earlier layout still parses.
import { codecConfigToJson, parseCodecConfig } from '../codec/config.ts';
import {
  EARLIER_MODEL_TYPES,
  FIXED_TEXT_VALUES,
  IGNORED_ROOT_KEYS,
  IGNORED_ROPE_KEYS,
  IGNORED_TEXT_KEYS,
  QUANTIZATION,
  RELEASE_ARCHITECTURE,
  RELEASE_MODEL_TYPE,
  ROOT,
  SPECIAL_TOKENS,
  TEXT,
} from './config-keys.ts';
import { type AudioPart, audioDecoderToJson, parseEarlierAudio, parseReleaseAudio } from './config-layouts.ts';
import { asObject, ConfigSection, configError } from './config-read.ts';
import {
  checkAgreement,
  type Drama3Config,
  LAYER_TYPES,
  type LayerType,
  makeTextConfig,
  type QuantizationConfig,
  type SpecialTokenIds,
  type TextConfig,
} from './config-types.ts';

export const DEFAULT_PROMPT_FORMAT = 'reference-bracket-v1';

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
  if (!section.has(TEXT.layerTypes)) {
    const interval = section.integer(TEXT.fullAttentionInterval, { fallback: 4 });
    return Array.from({ length: layers }, (_, index) =>
      (index + 1) % interval === 0 ? 'full_attention' : 'linear_attention',
    );
  }
  const path = section.field(TEXT.layerTypes);
  const values = section.array(TEXT.layerTypes);
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
  const rope = section.section(TEXT.ropeParameters);
  if (rope !== undefined) {
    sections.push(rope);
    rope.choice(TEXT.ropeType, ['default'], 'default');
    rope.ignore(...IGNORED_ROPE_KEYS);
  }
  const ropeSource = rope?.has(TEXT.ropeTheta) ? rope : section;
  const rotarySource = rope?.has(TEXT.partialRotaryFactor) ? rope : section;
  for (const [key, value] of FIXED_TEXT_VALUES) requireValue(section, key, value);
  section.ignore(...IGNORED_TEXT_KEYS);
  const layers = section.integer(TEXT.layers);
  const text = makeTextConfig({
    hiddenSize: section.integer(TEXT.hiddenSize),
    layerTypes: parseLayerTypes(section, layers),
    attentionHeads: section.integer(TEXT.heads),
    keyValueHeads: section.integer(TEXT.keyValueHeads),
    headDim: section.integer(TEXT.headDim),
    ropeTheta: ropeSource.positive(TEXT.ropeTheta),
    partialRotaryFactor: rotarySource.positive(TEXT.partialRotaryFactor, { fallback: 0.25 }),
    linearKeyHeads: section.integer(TEXT.linearKeyHeads),
    linearValueHeads: section.integer(TEXT.linearValueHeads),
    linearKeyHeadDim: section.integer(TEXT.linearKeyHeadDim),
    linearValueHeadDim: section.integer(TEXT.linearValueHeadDim),
    linearConvKernel: section.integer(TEXT.linearConvKernel, { fallback: 4 }),
    experts: section.integer(TEXT.experts),
    expertsPerToken: section.integer(TEXT.expertsPerToken),
    expertIntermediate: section.integer(TEXT.expertIntermediate),
    sharedExpertIntermediate: section.integer(TEXT.sharedExpertIntermediate),
    rmsNormEps: section.positive(TEXT.rmsNormEps, { fallback: 1e-6 }),
    maxPositions: section.integer(TEXT.maxPositions),
    vocabSize: section.integer(TEXT.vocabSize),
    tieWordEmbeddings: section.boolean(TEXT.tieWordEmbeddings, false),
    eosTokenIds: section.tokenIds(TEXT.eos),
  });
  return text;
}

function parseQuantization(section: ConfigSection): QuantizationConfig {
  const method = section.choice(QUANTIZATION.method, ['fp8']);
  const format = section.choice(QUANTIZATION.format, ['e4m3'], 'e4m3');
  const blockSize = section.integerArray(QUANTIZATION.blockSize);
  if (blockSize.length !== 2 || blockSize[0] !== 128 || blockSize[1] !== 128) {
    throw configError(
      'CONFIG_UNSUPPORTED',
      section.field(QUANTIZATION.blockSize),
      `must be [128, 128], got [${blockSize}]`,
    );
  }
  const activationScheme = section.choice(QUANTIZATION.activationScheme, ['dynamic'], 'dynamic');
  const modules = [section.raw(QUANTIZATION.modulesToNotConvert), section.raw(QUANTIZATION.ignoredLayers)].flatMap(
    (value, index) => {
      if (value === undefined) return [];
      const key = index === 0 ? QUANTIZATION.modulesToNotConvert : QUANTIZATION.ignoredLayers;
      if (!Array.isArray(value)) throw configError('CONFIG_NOT_ARRAY', section.field(key), 'must be an array');
      return value.map((item, position) => {
        if (typeof item !== 'string') {
          throw configError('CONFIG_NOT_STRING', `${section.field(key)}[${position}]`, 'must be a module name');
        }
        return item;
      });
    },
  );
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
    imStart: read(SPECIAL_TOKENS.imStart),
    imEnd: read(SPECIAL_TOKENS.imEnd),
    voice: read(SPECIAL_TOKENS.voice),
    text: read(SPECIAL_TOKENS.text),
    interleave: read(SPECIAL_TOKENS.interleave),
    semanticBegin: read(SPECIAL_TOKENS.semanticBegin),
    speakerBegin: read(SPECIAL_TOKENS.speakerBegin),
  };
}

/** A top-level token id of the release layout, checked against the vocabulary. */
function rootTokenId(root: ConfigSection, key: string, vocabSize: number): number | undefined {
  const id = root.tokenId(key);
  if (id !== undefined && id >= vocabSize)
    throw configError('CONFIG_ID_OUT_OF_VOCAB', key, `${id} >= vocab_size ${vocabSize}`);
  return id;
}

/** An id stated both at the top level and in special_token_ids must be the same id. */
function agreeingId(top: number | undefined, topKey: string, listed: number | undefined, listedKey: string) {
  if (top !== undefined && listed !== undefined && top !== listed) {
    throw configError(
      'CONFIG_PARTS_DISAGREE',
      topKey,
      `${top} disagrees with ${ROOT.specialTokens}.${listedKey} ${listed}`,
    );
  }
  return top ?? listed;
}

/** Which layout the file is in: the release's (`audio_decoder_config` or model_type fish_omni) or the earlier one. */
function isReleaseLayout(root: ConfigSection): boolean {
  if (root.has(ROOT.audioDecoder)) return true;
  return root.raw(ROOT.modelType) === RELEASE_MODEL_TYPE;
}

function checkArchitectures(root: ConfigSection): void {
  const value = root.raw(ROOT.architectures);
  if (value === undefined) return;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    throw configError('CONFIG_NOT_ARRAY', ROOT.architectures, 'must be an array of class names');
  }
  if (!value.includes(RELEASE_ARCHITECTURE)) {
    throw configError(
      'CONFIG_UNSUPPORTED',
      ROOT.architectures,
      `must name ${JSON.stringify(RELEASE_ARCHITECTURE)}, got ${JSON.stringify(value)}`,
    );
  }
}

/** The tower and codebook part in whichever layout the file uses; the two layouts do not mix. */
function parseAudioPart(root: ConfigSection, codec: Drama3Config['codec'], vocabSize: number): AudioPart {
  if (!isReleaseLayout(root)) {
    root.choice(ROOT.modelType, EARLIER_MODEL_TYPES, 'drama3');
    root.ignore(ROOT.architectures);
    return parseEarlierAudio(root);
  }
  root.choice(ROOT.modelType, [RELEASE_MODEL_TYPE], RELEASE_MODEL_TYPE);
  checkArchitectures(root);
  for (const key of [ROOT.earlierTower, ROOT.earlierAudio]) {
    if (root.has(key)) {
      throw configError(
        'CONFIG_UNSUPPORTED',
        key,
        `belongs to the earlier layout; it cannot sit beside ${ROOT.audioDecoder}`,
      );
    }
  }
  // Read, checked and not used: ids for padding, which inference never emits.
  rootTokenId(root, ROOT.pad, vocabSize);
  rootTokenId(root, ROOT.audioPad, vocabSize);
  return parseReleaseAudio(root, codec, vocabSize);
}

/**
 * Parses a checkpoint's config.json. In the earlier layout, absent `tower_config` / `audio_config` / `codec_config`
 * fall back to the full geometry's guesses (named in `defaulted`); `unknownKeys` lists every key path nothing read.
 */
export function parseConfig(json: unknown): { config: Drama3Config; unknownKeys: string[]; defaulted: string[] } {
  const root = new ConfigSection(asObject(json, 'config.json'), '');
  root.ignore(...IGNORED_ROOT_KEYS);
  const textSection = root.section(ROOT.text);
  if (textSection === undefined) throw configError('CONFIG_MISSING_FIELD', ROOT.text, 'is missing');
  const sections = [root, textSection];
  const text = parseText(textSection, sections);
  const quantizationSection = root.section(ROOT.quantization);
  const tokensSection = root.section(ROOT.specialTokens);
  const codec = parseCodecConfig(root.raw(ROOT.codec), 'config.json');
  const part = parseAudioPart(root, codec, text.vocabSize);
  checkAgreement(text, part.tower, part.audio, codec, part.paths);
  const listed = parseSpecialTokens(tokensSection, text.vocabSize);
  const eos = rootTokenId(root, ROOT.eos, text.vocabSize);
  const specialTokens: SpecialTokenIds = {
    ...listed,
    imEnd: agreeingId(eos, ROOT.eos, listed.imEnd, SPECIAL_TOKENS.imEnd),
    semanticBegin: agreeingId(
      part.semanticBegin,
      ROOT.semanticStart,
      listed.semanticBegin,
      SPECIAL_TOKENS.semanticBegin,
    ),
  };
  const config: Drama3Config = {
    text,
    tower: part.tower,
    audio: part.audio,
    codec,
    quantization: quantizationSection === undefined ? undefined : parseQuantization(quantizationSection),
    specialTokens,
    synthetic: root.boolean(ROOT.synthetic, false),
    promptFormat: root.string(ROOT.promptFormat, DEFAULT_PROMPT_FORMAT),
  };
  const unknownKeys = [...sections, ...part.sections, quantizationSection, tokensSection].flatMap(
    (section) => section?.unknownKeys() ?? [],
  );
  const defaulted = [...part.defaulted, ...(root.has(ROOT.codec) ? [] : [ROOT.codec])];
  return { config, unknownKeys, defaulted };
}

function textToJson(text: TextConfig): Record<string, unknown> {
  return {
    [TEXT.hiddenSize]: text.hiddenSize,
    [TEXT.layers]: text.layers,
    [TEXT.layerTypes]: [...text.layerTypes],
    [TEXT.heads]: text.attentionHeads,
    [TEXT.keyValueHeads]: text.keyValueHeads,
    [TEXT.headDim]: text.headDim,
    [TEXT.ropeParameters]: {
      [TEXT.ropeType]: 'default',
      [TEXT.ropeTheta]: text.ropeTheta,
      [TEXT.partialRotaryFactor]: text.partialRotaryFactor,
    },
    [TEXT.linearKeyHeads]: text.linearKeyHeads,
    [TEXT.linearValueHeads]: text.linearValueHeads,
    [TEXT.linearKeyHeadDim]: text.linearKeyHeadDim,
    [TEXT.linearValueHeadDim]: text.linearValueHeadDim,
    [TEXT.linearConvKernel]: text.linearConvKernel,
    [TEXT.experts]: text.experts,
    [TEXT.expertsPerToken]: text.expertsPerToken,
    [TEXT.expertIntermediate]: text.expertIntermediate,
    [TEXT.sharedExpertIntermediate]: text.sharedExpertIntermediate,
    [TEXT.rmsNormEps]: text.rmsNormEps,
    [TEXT.maxPositions]: text.maxPositions,
    [TEXT.vocabSize]: text.vocabSize,
    [TEXT.tieWordEmbeddings]: text.tieWordEmbeddings,
    ...(text.eosTokenIds.length === 0
      ? {}
      : { [TEXT.eos]: text.eosTokenIds.length === 1 ? text.eosTokenIds[0] : [...text.eosTokenIds] }),
  };
}

/** The config.json object that `parseConfig` reads back to `config`: the release layout (what `synth` writes). */
export function configToJson(config: Drama3Config): Record<string, unknown> {
  const { tower, audio, quantization, specialTokens } = config;
  const listed = Object.fromEntries(
    (
      [
        [SPECIAL_TOKENS.imStart, specialTokens.imStart],
        [SPECIAL_TOKENS.voice, specialTokens.voice],
        [SPECIAL_TOKENS.text, specialTokens.text],
        [SPECIAL_TOKENS.interleave, specialTokens.interleave],
        [SPECIAL_TOKENS.speakerBegin, specialTokens.speakerBegin],
      ] as const
    ).filter(([, id]) => id !== undefined),
  );
  const begin = specialTokens.semanticBegin;
  return {
    [ROOT.architectures]: [RELEASE_ARCHITECTURE],
    [ROOT.modelType]: RELEASE_MODEL_TYPE,
    ...(config.synthetic ? { [ROOT.synthetic]: true } : {}),
    [ROOT.promptFormat]: config.promptFormat,
    ...(begin === undefined
      ? {}
      : { [ROOT.semanticStart]: begin, [ROOT.semanticEnd]: begin + audio.semanticCodebookSize - 1 }),
    ...(specialTokens.imEnd === undefined ? {} : { [ROOT.eos]: specialTokens.imEnd }),
    [ROOT.text]: textToJson(config.text),
    [ROOT.audioDecoder]: audioDecoderToJson(tower, audio),
    ...(quantization === undefined
      ? {}
      : {
          [ROOT.quantization]: {
            [QUANTIZATION.method]: quantization.method,
            [QUANTIZATION.format]: quantization.format,
            [QUANTIZATION.blockSize]: [...quantization.blockSize],
            [QUANTIZATION.activationScheme]: quantization.activationScheme,
            ...(quantization.modulesToNotConvert.length === 0
              ? {}
              : { [QUANTIZATION.modulesToNotConvert]: [...quantization.modulesToNotConvert] }),
          },
        }),
    ...(Object.keys(listed).length === 0 ? {} : { [ROOT.specialTokens]: listed }),
    [ROOT.codec]: codecConfigToJson(config.codec),
  };
}
