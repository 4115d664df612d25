import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { REAL_CODEC_CONFIG } from '../../src/codec/config.ts';
import { DramaError } from '../../src/errors.ts';
import {
  configToJson,
  type Drama3Config,
  FULL_PRESET,
  loadConfig,
  parseConfig,
  SYNTHETIC_WEIGHTS_NOTICE,
  syntheticWeightsNotice,
  TINY_PRESET,
} from '../../src/model/config.ts';
import { NO_SPECIAL_TOKENS, tinyConfig } from './tiny-config.ts';

const TINY = tinyConfig({ specialTokens: { ...NO_SPECIAL_TOKENS, imEnd: 151645, semanticBegin: 151688 } });

type Json = Record<string, unknown>;

/** The earlier layout (tower_config + audio_config, model_type drama3) of `config`, written out key by key. */
function earlierJson(config: Drama3Config): Json {
  const { tower, audio, specialTokens } = config;
  const json = structuredClone(configToJson(config)) as Json;
  for (const key of ['architectures', 'audio_decoder_config', 'semantic_start_token_id', 'semantic_end_token_id']) {
    delete json[key];
  }
  delete json.eos_token_id;
  json.model_type = 'drama3';
  json.audio_config = {
    num_codebooks: audio.codebooks,
    semantic_codebook_size: audio.semanticCodebookSize,
    codebook_size: audio.codebookSize,
    frame_embedding_codebook: audio.frameEmbeddingCodebook,
  };
  json.tower_config = {
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
  };
  const tokens = { ...(json.special_token_ids as Json | undefined) };
  if (specialTokens.imEnd !== undefined) tokens.im_end = specialTokens.imEnd;
  if (specialTokens.semanticBegin !== undefined) tokens.semantic_begin = specialTokens.semanticBegin;
  if (Object.keys(tokens).length > 0) json.special_token_ids = tokens;
  return json;
}

/** `json` with `path` (dotted) set to `value`, or deleted when undefined. */
function withField(json: Json, path: string, value: unknown): Json {
  const copy = structuredClone(json);
  const keys = path.split('.');
  let node = copy as Record<string, unknown>;
  for (const key of keys.slice(0, -1)) node = node[key] as Record<string, unknown>;
  const last = keys.at(-1)!;
  if (value === undefined) delete node[last];
  else node[last] = value;
  return copy;
}

/** The tiny config.json (release layout) with `path` set to `value`, or deleted when undefined. */
function tinyJsonWith(path: string, value: unknown): Json {
  return withField(configToJson(TINY), path, value);
}

/** The tiny config.json in the earlier layout with `path` set to `value`, or deleted when undefined. */
function earlierTinyJsonWith(path: string, value: unknown): Json {
  return withField(earlierJson(TINY), path, value);
}

function refuses(json: unknown, code: string, param?: string): void {
  assert.throws(
    () => parseConfig(json),
    (error: unknown) => {
      assert.ok(error instanceof DramaError, `expected a DramaError, got ${error}`);
      assert.equal(error.code, code, error.message);
      if (param !== undefined) assert.equal(error.param, param);
      assert.equal(error.kind, 'bad_checkpoint');
      return true;
    },
  );
}

describe('parseConfig', () => {
  test('reads back what configToJson writes, for both presets and both expert forms', () => {
    for (const config of [
      TINY,
      {
        ...TINY,
        ...FULL_PRESET,
        codec: REAL_CODEC_CONFIG,
        quantization: {
          method: 'fp8',
          format: 'e4m3',
          blockSize: [128, 128],
          activationScheme: 'dynamic',
          modulesToNotConvert: [],
        },
        synthetic: false,
      } satisfies Drama3Config,
    ]) {
      const parsed = parseConfig(JSON.parse(JSON.stringify(configToJson(config))));
      assert.deepEqual(parsed.config, config);
      assert.deepEqual(parsed.unknownKeys, []);
      assert.deepEqual(parsed.defaulted, []);
    }
  });

  test('derives the handy values from the real geometry', () => {
    const text = FULL_PRESET.text;
    assert.equal(text.rotaryDim, 64);
    assert.deepEqual(text.fullAttentionLayers, [3, 7, 11, 15, 19, 23, 27, 31, 35, 39]);
    assert.equal(text.linearAttentionLayers.length, 30);
    assert.equal(text.linearConvChannels, 2 * 16 * 128 + 32 * 128);
    assert.equal(text.queryProjectionRows, 16 * 256 * 2);
    assert.equal(text.linearValueHeadsPerKeyHead, 2);
    assert.equal(FULL_PRESET.audio.codebookEmbeddingRows, 4096 + 9 * 1024);
    assert.equal(TINY_PRESET.text.rotaryDim, 4);
    assert.equal(TINY_PRESET.text.vocabSize % 64, 0);
  });

  test('reads the release quantization_config, ignored module lists included', () => {
    const json = tinyJsonWith('quantization_config', {
      quant_method: 'fp8',
      fmt: 'e4m3',
      weight_block_size: [128, 128],
      activation_scheme: 'dynamic',
      modules_to_not_convert: ['lm_head'],
      ignored_layers: ['model.embed_tokens'],
    });
    const { config, unknownKeys } = parseConfig(json);
    assert.deepEqual(unknownKeys, []);
    assert.deepEqual(config.quantization?.modulesToNotConvert, ['lm_head', 'model.embed_tokens']);
  });

  test('reports unknown keys once, with their paths, and does not fail', () => {
    const json = tinyJsonWith('text_config.made_up', 1);
    json.extra_root = true;
    (json.audio_decoder_config as Json).tower_extra = 'x';
    ((json.text_config as Json).rope_parameters as Json as Json).rope_extra = 2;
    const { unknownKeys } = parseConfig(json);
    assert.deepEqual(unknownKeys.sort(), [
      'audio_decoder_config.tower_extra',
      'extra_root',
      'text_config.made_up',
      'text_config.rope_parameters.rope_extra',
    ]);
    const earlier = earlierTinyJsonWith('tower_config.tower_extra', 'x');
    assert.deepEqual(parseConfig(earlier).unknownKeys, ['tower_config.tower_extra']);
  });

  test('accepts top-level rope_theta / partial_rotary_factor and a derived layer pattern', () => {
    const json = tinyJsonWith('text_config.rope_parameters', undefined);
    const text = json.text_config as Json;
    text.rope_theta = 5000;
    text.partial_rotary_factor = 0.5;
    delete text.layer_types;
    text.full_attention_interval = 4;
    const { config } = parseConfig(json);
    assert.equal(config.text.ropeTheta, 5000);
    assert.equal(config.text.rotaryDim, 8);
    assert.deepEqual(config.text.layerTypes, TINY.text.layerTypes);
  });

  test('fills absent tower, audio and codec sections of the earlier layout from the full guesses and names them', () => {
    const json = earlierTinyJsonWith('tower_config', undefined);
    delete json.audio_config;
    delete json.codec_config;
    const { config, defaulted } = parseConfig(json);
    assert.deepEqual(defaulted, ['tower_config', 'audio_config', 'codec_config']);
    assert.deepEqual(config.tower, FULL_PRESET.tower);
    assert.deepEqual(config.codec, REAL_CODEC_CONFIG);
    assert.equal(config.synthetic, true);
  });

  test('the release layout and the earlier layout of one config parse to the same config', () => {
    const full: Drama3Config = { ...TINY, ...FULL_PRESET, codec: REAL_CODEC_CONFIG };
    for (const config of [TINY, full]) {
      const release = parseConfig(JSON.parse(JSON.stringify(configToJson(config))));
      const earlier = parseConfig(JSON.parse(JSON.stringify(earlierJson(config))));
      assert.deepEqual(release.config, config);
      assert.deepEqual(earlier.config, config);
      assert.deepEqual(earlier.unknownKeys, []);
    }
  });

  test('writes the release layout: FishOmniModel, the tower under audio_decoder_config, semantic ids on top', () => {
    const json = configToJson(TINY);
    assert.deepEqual(json.architectures, ['FishOmniModel']);
    assert.equal(json.model_type, 'fish_omni');
    assert.equal(json.tower_config, undefined);
    assert.equal(json.audio_config, undefined);
    assert.equal(json.semantic_start_token_id, 151688);
    assert.equal(json.semantic_end_token_id, 151688 + 4095);
    assert.equal(json.eos_token_id, 151645);
    assert.deepEqual(json.audio_decoder_config, {
      dim: 64,
      n_head: 4,
      n_local_heads: 2,
      head_dim: 16,
      intermediate_size: 128,
      norm_eps: 1e-6,
      num_codebooks: 10,
      vocab_size: 1024,
      shared_enrichment_layers: 4,
      rope_base: 10_000_000,
      rotary_percent: 0.5,
    });
  });

  test('reads the tower layer count and rotary dims of the release layout as MODEL.md §3 states them', () => {
    const { config } = parseConfig(tinyJsonWith('audio_decoder_config.vq_backbone_codebooks', 2));
    assert.equal(config.tower.layers, 4 + 10 - 1);
    assert.equal(config.tower.codebookLayers, 9);
    assert.equal(config.tower.rotaryDim, 0.5 * 16);
    assert.equal(parseConfig(tinyJsonWith('audio_decoder_config.n_layer', 13)).config.tower.layers, 13);
    const noIds = tinyJsonWith('semantic_start_token_id', undefined);
    delete noIds.semantic_end_token_id;
    assert.equal(parseConfig(noIds).config.audio.semanticCodebookSize, TINY.codec.semanticCodebookSize);
    assert.equal(parseConfig(noIds).config.specialTokens.semanticBegin, undefined);
  });

  test('refuses each field of the release layout given a value of the wrong kind, by name', () => {
    const integer = {
      string: ['7', 'CONFIG_NOT_INTEGER'],
      float: [2.5, 'CONFIG_NOT_INTEGER'],
      negative: [-1, 'CONFIG_OUT_OF_RANGE'],
    };
    const number = { string: ['7', 'CONFIG_NOT_NUMBER'], negative: [-1, 'CONFIG_OUT_OF_RANGE'] };
    const tokenId = {
      string: ['7', 'CONFIG_NOT_INTEGER'],
      float: [2.5, 'CONFIG_NOT_INTEGER'],
      negative: [-1, 'CONFIG_ID_NOT_INT32'],
    };
    const text = { number: [7, 'CONFIG_NOT_STRING'], other: ['llama', 'CONFIG_UNSUPPORTED'] };
    const required = ['CONFIG_MISSING_FIELD'];
    const fields: [string, Record<string, unknown[]>, string[]?][] = [
      ['audio_decoder_config.dim', integer, required],
      ['audio_decoder_config.n_head', integer, required],
      ['audio_decoder_config.n_local_heads', integer, required],
      ['audio_decoder_config.head_dim', integer, required],
      ['audio_decoder_config.intermediate_size', integer, required],
      ['audio_decoder_config.norm_eps', number],
      ['audio_decoder_config.num_codebooks', integer, required],
      ['audio_decoder_config.vocab_size', integer, required],
      ['audio_decoder_config.shared_enrichment_layers', integer, required],
      ['audio_decoder_config.rope_base', number, required],
      ['audio_decoder_config.rotary_percent', number, required],
      ['audio_decoder_config.vq_backbone_codebooks', integer],
      ['audio_decoder_config.n_layer', integer],
      ['audio_decoder_config.frame_embedding_codebook', { ...integer, float: [1.5, 'CONFIG_NOT_INTEGER'] }],
      ['audio_decoder_config.rope_style', text],
      ['semantic_start_token_id', tokenId, required],
      ['semantic_end_token_id', tokenId, required],
      ['eos_token_id', tokenId],
      ['pad_token_id', tokenId],
      ['audio_pad_token_id', tokenId],
      ['model_type', text],
      ['architectures', { string: ['FishOmniModel', 'CONFIG_NOT_ARRAY'], other: [['Qwen3'], 'CONFIG_UNSUPPORTED'] }],
      ['audio_decoder_config', { number: [3, 'CONFIG_NOT_OBJECT'] }, required],
    ];
    for (const [path, cases, missing] of fields) {
      for (const [value, code] of Object.values(cases)) refuses(tinyJsonWith(path, value), code as string, path);
      if (missing !== undefined) refuses(tinyJsonWith(path, undefined), missing[0]!, path);
    }
  });

  test('refuses every bad field by name', () => {
    refuses([], 'CONFIG_NOT_OBJECT', 'config.json');
    refuses(tinyJsonWith('text_config', 3), 'CONFIG_NOT_OBJECT', 'text_config');
    refuses(tinyJsonWith('text_config', undefined), 'CONFIG_MISSING_FIELD', 'text_config');
    refuses(tinyJsonWith('text_config.hidden_size', undefined), 'CONFIG_MISSING_FIELD', 'text_config.hidden_size');
    refuses(tinyJsonWith('text_config.hidden_size', 64.5), 'CONFIG_NOT_INTEGER', 'text_config.hidden_size');
    refuses(tinyJsonWith('text_config.hidden_size', '64'), 'CONFIG_NOT_INTEGER', 'text_config.hidden_size');
    refuses(tinyJsonWith('text_config.num_experts', 0), 'CONFIG_OUT_OF_RANGE', 'text_config.num_experts');
    refuses(tinyJsonWith('text_config.vocab_size', 2 ** 31), 'CONFIG_OUT_OF_RANGE', 'text_config.vocab_size');
    refuses(tinyJsonWith('text_config.rms_norm_eps', 'small'), 'CONFIG_NOT_NUMBER', 'text_config.rms_norm_eps');
    refuses(tinyJsonWith('text_config.rms_norm_eps', -1), 'CONFIG_OUT_OF_RANGE', 'text_config.rms_norm_eps');
    refuses(
      tinyJsonWith('text_config.tie_word_embeddings', 1),
      'CONFIG_NOT_BOOLEAN',
      'text_config.tie_word_embeddings',
    );
    refuses(tinyJsonWith('synthetic', 'yes'), 'CONFIG_NOT_BOOLEAN', 'synthetic');
    refuses(tinyJsonWith('prompt_format', 7), 'CONFIG_NOT_STRING', 'prompt_format');
    refuses(earlierTinyJsonWith('tower_config.rope_style', 'spiral'), 'CONFIG_UNSUPPORTED', 'tower_config.rope_style');
    refuses(
      tinyJsonWith('audio_decoder_config.rope_style', 'spiral'),
      'CONFIG_UNSUPPORTED',
      'audio_decoder_config.rope_style',
    );
    refuses(tinyJsonWith('text_config.hidden_act', 'gelu'), 'CONFIG_UNSUPPORTED', 'text_config.hidden_act');
    refuses(
      tinyJsonWith('text_config.rope_parameters.rope_type', 'yarn'),
      'CONFIG_UNSUPPORTED',
      'text_config.rope_parameters.rope_type',
    );
    refuses(tinyJsonWith('text_config.layer_types', 'linear'), 'CONFIG_NOT_ARRAY', 'text_config.layer_types');
    refuses(tinyJsonWith('model_type', 'llama'), 'CONFIG_UNSUPPORTED', 'model_type');
    const quantization = { quant_method: 'fp8', weight_block_size: [128, 128] };
    refuses(
      tinyJsonWith('quantization_config', { ...quantization, modules_to_not_convert: 'lm_head' }),
      'CONFIG_NOT_ARRAY',
      'quantization_config.modules_to_not_convert',
    );
    refuses(
      tinyJsonWith('quantization_config', { ...quantization, ignored_layers: [3] }),
      'CONFIG_NOT_STRING',
      'quantization_config.ignored_layers[0]',
    );
    refuses(
      tinyJsonWith('quantization_config', { ...quantization, weight_block_size: 128 }),
      'CONFIG_NOT_ARRAY',
      'quantization_config.weight_block_size',
    );
  });

  test('refuses token ids that do not fit int32 or the vocabulary', () => {
    refuses(tinyJsonWith('text_config.eos_token_id', 2 ** 31), 'CONFIG_ID_NOT_INT32', 'text_config.eos_token_id');
    refuses(tinyJsonWith('text_config.eos_token_id', [1, -1]), 'CONFIG_ID_NOT_INT32', 'text_config.eos_token_id[1]');
    refuses(tinyJsonWith('special_token_ids', { voice: 2 ** 32 }), 'CONFIG_ID_NOT_INT32', 'special_token_ids.voice');
    refuses(earlierTinyJsonWith('special_token_ids.im_end', 1.5), 'CONFIG_NOT_INTEGER', 'special_token_ids.im_end');
    refuses(
      earlierTinyJsonWith('special_token_ids.semantic_begin', TINY.text.vocabSize),
      'CONFIG_ID_OUT_OF_VOCAB',
      'special_token_ids.semantic_begin',
    );
    refuses(tinyJsonWith('eos_token_id', TINY.text.vocabSize), 'CONFIG_ID_OUT_OF_VOCAB', 'eos_token_id');
    refuses(
      tinyJsonWith('semantic_end_token_id', TINY.text.vocabSize),
      'CONFIG_ID_OUT_OF_VOCAB',
      'semantic_end_token_id',
    );
    refuses(tinyJsonWith('pad_token_id', TINY.text.vocabSize), 'CONFIG_ID_OUT_OF_VOCAB', 'pad_token_id');
    refuses(
      tinyJsonWith('text_config.eos_token_id', TINY.text.vocabSize + 5),
      'CONFIG_ID_OUT_OF_VOCAB',
      'text_config.eos_token_id[0]',
    );
  });

  test('refuses broken structural assumptions', () => {
    refuses(
      tinyJsonWith('text_config.layer_types', ['linear_attention']),
      'CONFIG_BAD_LAYER_TYPES',
      'text_config.layer_types',
    );
    const badType = [...TINY.text.layerTypes];
    badType[3] = 'sliding_attention' as never;
    refuses(tinyJsonWith('text_config.layer_types', badType), 'CONFIG_BAD_LAYER_TYPES', 'text_config.layer_types[3]');
    refuses(
      tinyJsonWith('text_config.num_key_value_heads', 3),
      'CONFIG_HEADS_MISMATCH',
      'text_config.num_key_value_heads',
    );
    refuses(
      tinyJsonWith('text_config.linear_num_key_heads', 3),
      'CONFIG_HEADS_MISMATCH',
      'text_config.linear_num_key_heads',
    );
    refuses(
      earlierTinyJsonWith('tower_config.num_key_value_heads', 3),
      'CONFIG_HEADS_MISMATCH',
      'tower_config.num_key_value_heads',
    );
    refuses(
      tinyJsonWith('audio_decoder_config.n_local_heads', 3),
      'CONFIG_HEADS_MISMATCH',
      'audio_decoder_config.n_local_heads',
    );
    refuses(
      tinyJsonWith('text_config.num_experts_per_tok', 9),
      'CONFIG_TOP_K_EXCEEDS_EXPERTS',
      'text_config.num_experts_per_tok',
    );
    // head_dim 16 × 0.1875 = 3 rotary dims: odd.
    refuses(
      tinyJsonWith('text_config.rope_parameters.partial_rotary_factor', 0.1875),
      'CONFIG_ROTARY_ODD',
      'text_config.partial_rotary_factor',
    );
    refuses(earlierTinyJsonWith('tower_config.rotary_dim', 7), 'CONFIG_ROTARY_ODD', 'tower_config.rotary_dim');
    refuses(
      earlierTinyJsonWith('tower_config.num_codebook_layers', 8),
      'CONFIG_PARTS_DISAGREE',
      'tower_config.num_codebook_layers',
    );
    refuses(
      earlierTinyJsonWith('audio_config.codebook_size', 512),
      'CONFIG_PARTS_DISAGREE',
      'audio_config.codebook_size',
    );
    refuses(
      earlierTinyJsonWith('audio_config.frame_embedding_codebook', 10),
      'CONFIG_OUT_OF_RANGE',
      'audio_config.frame_embedding_codebook',
    );
    // Tiny tower head_dim 16: 16 × 0.1875 = 3 rotary dims (odd), 16 × 0.3 = 4.8 (not whole).
    for (const percent of [0.1875, 0.3, 2]) {
      refuses(
        tinyJsonWith('audio_decoder_config.rotary_percent', percent),
        'CONFIG_ROTARY_ODD',
        'audio_decoder_config.rotary_percent',
      );
    }
    refuses(tinyJsonWith('audio_decoder_config.n_layer', 12), 'CONFIG_PARTS_DISAGREE', 'audio_decoder_config.n_layer');
    refuses(tinyJsonWith('audio_decoder_config.n_layer', 4), 'CONFIG_OUT_OF_RANGE', 'audio_decoder_config.n_layer');
    refuses(
      tinyJsonWith('audio_decoder_config.vocab_size', 512),
      'CONFIG_PARTS_DISAGREE',
      'audio_decoder_config.vocab_size',
    );
    refuses(
      tinyJsonWith('semantic_end_token_id', TINY.specialTokens.semanticBegin! + 4094),
      'CONFIG_PARTS_DISAGREE',
      'semantic_end_token_id',
    );
    refuses(
      tinyJsonWith('semantic_end_token_id', TINY.specialTokens.semanticBegin! - 1),
      'CONFIG_OUT_OF_RANGE',
      'semantic_end_token_id',
    );
    refuses(
      tinyJsonWith('audio_decoder_config.frame_embedding_codebook', 10),
      'CONFIG_OUT_OF_RANGE',
      'audio_decoder_config.frame_embedding_codebook',
    );
    refuses(tinyJsonWith('special_token_ids', { im_end: 7 }), 'CONFIG_PARTS_DISAGREE', 'eos_token_id');
    refuses(tinyJsonWith('tower_config', {}), 'CONFIG_UNSUPPORTED', 'tower_config');
    refuses(tinyJsonWith('audio_config', {}), 'CONFIG_UNSUPPORTED', 'audio_config');
    refuses(tinyJsonWith('audio_decoder_config', undefined), 'CONFIG_MISSING_FIELD', 'audio_decoder_config');
    refuses(
      tinyJsonWith('quantization_config', { quant_method: 'fp8', weight_block_size: [64, 64] }),
      'CONFIG_UNSUPPORTED',
      'quantization_config.weight_block_size',
    );
    // Codec rates that do not multiply to the frame length are refused by the codec's parser.
    refuses(tinyJsonWith('codec_config.decoder_rates', [8, 8, 4, 4]), 'CODEC_CONFIG_RATES_MISMATCH');
  });
});

describe('loadConfig', () => {
  const folders: string[] = [];
  after(async () => {
    for (const folder of folders) await rm(folder, { recursive: true, force: true });
  });
  const folder = async () => {
    const path = await mkdtemp(join(tmpdir(), 'drama3-config-'));
    folders.push(path);
    return path;
  };

  test('loads a written config', async () => {
    const dir = await folder();
    await writeFile(join(dir, 'config.json'), JSON.stringify(configToJson(TINY)));
    const loaded = await loadConfig(dir);
    assert.deepEqual(loaded.config, TINY);
    assert.equal(syntheticWeightsNotice(loaded.config), SYNTHETIC_WEIGHTS_NOTICE);
    assert.equal(syntheticWeightsNotice({ synthetic: false }), undefined);
  });

  test('refuses a missing, unreadable or non-JSON file by name', async () => {
    const empty = await folder();
    await assert.rejects(loadConfig(empty), { code: 'CONFIG_NOT_FOUND' });
    const unreadable = await folder();
    await mkdir(join(unreadable, 'config.json'));
    await assert.rejects(loadConfig(unreadable), { code: 'CHECKPOINT_NOT_REGULAR_FILE' });
    const garbled = await folder();
    await writeFile(join(garbled, 'config.json'), '{"text_config": ');
    await assert.rejects(loadConfig(garbled), { code: 'CONFIG_NOT_JSON' });
  });
});
