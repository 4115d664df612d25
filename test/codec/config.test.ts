import assert from 'node:assert/strict';
import { test } from 'node:test';
import { codecConfigToJson, parseCodecConfig, REAL_CODEC_CONFIG, TINY_CODEC_CONFIG } from '../../src/codec/config.ts';
import { DramaError } from '../../src/errors.ts';

test('an absent codec_config means the real codec', () => {
  assert.equal(parseCodecConfig(undefined, 'config.json'), REAL_CODEC_CONFIG);
});

test('the JSON form reads back to the same config', () => {
  assert.deepEqual(parseCodecConfig(codecConfigToJson(TINY_CODEC_CONFIG), 'config.json'), TINY_CODEC_CONFIG);
  assert.deepEqual(parseCodecConfig(codecConfigToJson(REAL_CODEC_CONFIG), 'config.json'), REAL_CODEC_CONFIG);
});

function refusal(mutate: (json: Record<string, unknown>) => void): DramaError {
  const json = structuredClone(codecConfigToJson(TINY_CODEC_CONFIG));
  mutate(json);
  try {
    parseCodecConfig(json, 'ckpt/config.json');
  } catch (error) {
    assert.ok(error instanceof DramaError);
    return error;
  }
  assert.fail('expected a refusal');
}

test('rates that do not multiply to the frame length are refused by field', () => {
  const error = refusal((json) => {
    json.decoder_rates = [8, 8, 4, 4];
  });
  assert.equal(error.code, 'CODEC_CONFIG_RATES_MISMATCH');
  assert.equal(error.param, 'codec_config.decoder_rates');
  assert.match(error.message, /ckpt\/config\.json.*1024.*4096.*2048/);
  assert.equal(refusal((json) => (json.encoder_rates = [2, 4, 8])).param, 'codec_config.encoder_rates');
});

test('missing and malformed fields name their path', () => {
  const missing = refusal((json) => {
    delete json.codebook_dim;
  });
  assert.equal(missing.code, 'CODEC_CONFIG_MISSING_FIELD');
  assert.equal(missing.param, 'codec_config.codebook_dim');
  const nested = refusal((json) => {
    (json.post_module as Record<string, unknown>).n_head = 1.5;
  });
  assert.equal(nested.code, 'CODEC_CONFIG_BAD_VALUE');
  assert.equal(nested.param, 'codec_config.post_module.n_head');
  const listItem = refusal((json) => {
    json.decoder_rates = [8, 'x', 4, 2];
  });
  assert.equal(listItem.param, 'codec_config.decoder_rates[1]');
  assert.equal(
    refusal((json) => ((json.pre_module as Record<string, unknown>).dim = 32)).param,
    'codec_config.pre_module.dim',
  );
});
