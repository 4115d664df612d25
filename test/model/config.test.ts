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

/** The tiny config.json with `path` (dotted; `[n]` indexes arrays) set to `value`, or deleted when undefined. */
function tinyJsonWith(path: string, value: unknown): Json {
  const json = structuredClone(configToJson(TINY)) as Json;
  const keys = path.split('.');
  let node = json as Record<string, unknown>;
  for (const key of keys.slice(0, -1)) node = node[key] as Record<string, unknown>;
  const last = keys.at(-1)!;
  if (value === undefined) delete node[last];
  else node[last] = value;
  return json;
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
    (json.tower_config as Json).tower_extra = 'x';
    ((json.text_config as Json).rope_parameters as Json as Json).rope_extra = 2;
    const { unknownKeys } = parseConfig(json);
    assert.deepEqual(unknownKeys.sort(), [
      'extra_root',
      'text_config.made_up',
      'text_config.rope_parameters.rope_extra',
      'tower_config.tower_extra',
    ]);
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

  test('fills absent tower, audio and codec sections from the full guesses and names them', () => {
    const json = tinyJsonWith('tower_config', undefined);
    delete json.audio_config;
    delete json.codec_config;
    const { config, defaulted } = parseConfig(json);
    assert.deepEqual(defaulted, ['tower_config', 'audio_config', 'codec_config']);
    assert.deepEqual(config.tower, FULL_PRESET.tower);
    assert.deepEqual(config.codec, REAL_CODEC_CONFIG);
    assert.equal(config.synthetic, true);
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
    refuses(tinyJsonWith('tower_config.rope_style', 'spiral'), 'CONFIG_UNSUPPORTED', 'tower_config.rope_style');
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
    refuses(tinyJsonWith('special_token_ids.im_end', 2 ** 32), 'CONFIG_ID_NOT_INT32', 'special_token_ids.im_end');
    refuses(tinyJsonWith('special_token_ids.im_end', 1.5), 'CONFIG_NOT_INTEGER', 'special_token_ids.im_end');
    refuses(
      tinyJsonWith('special_token_ids.semantic_begin', TINY.text.vocabSize),
      'CONFIG_ID_OUT_OF_VOCAB',
      'special_token_ids.semantic_begin',
    );
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
      tinyJsonWith('tower_config.num_key_value_heads', 3),
      'CONFIG_HEADS_MISMATCH',
      'tower_config.num_key_value_heads',
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
    refuses(tinyJsonWith('tower_config.rotary_dim', 7), 'CONFIG_ROTARY_ODD', 'tower_config.rotary_dim');
    refuses(
      tinyJsonWith('tower_config.num_codebook_layers', 8),
      'CONFIG_PARTS_DISAGREE',
      'tower_config.num_codebook_layers',
    );
    refuses(tinyJsonWith('audio_config.codebook_size', 512), 'CONFIG_PARTS_DISAGREE', 'audio_config.codebook_size');
    refuses(
      tinyJsonWith('audio_config.frame_embedding_codebook', 10),
      'CONFIG_OUT_OF_RANGE',
      'audio_config.frame_embedding_codebook',
    );
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
