import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { REAL_CODEC_CONFIG } from '../../src/codec/config.ts';
import { DramaError } from '../../src/errors.ts';
import { type Drama3Config, FP8_BLOCK_QUANTIZATION, FULL_PRESET } from '../../src/model/config.ts';
import {
  backboneNames,
  blockScaleShape,
  detectBackbonePrefix,
  detectExpertFormat,
  expectedTensors,
  towerNames,
} from '../../src/model/weights.ts';
import { assertWeightsMatch, checkWeights, describeFindings, type TensorInfo } from '../../src/model/weights-check.ts';
import { tinyConfig } from './tiny-config.ts';

const TINY = tinyConfig({ quantization: FP8_BLOCK_QUANTIZATION });
const FULL: Drama3Config = { ...TINY, ...FULL_PRESET, codec: REAL_CODEC_CONFIG };

function tableOf(entries: [string, TensorInfo][]) {
  const map = new Map(entries);
  return { infos: () => map, map };
}

describe('expectedTensors', () => {
  test('counts the tiny preset by hand: per layer 7 common + 9 GDN or 6 attention + 3 per expert (+3 scales)', () => {
    const perLayerCommon = 7;
    const experts = 8 * 3;
    const layers = 6 * (perLayerCommon + 9) + 2 * (perLayerCommon + 6);
    const backbone = layers + 4; // embed, norm, lm_head, frame-row codebook embedding
    const tower = 1 + 13 * 15 + 9;
    assert.equal(expectedTensors(TINY, { prefix: 'model.', experts: 'bf16' }).length, backbone + 8 * experts + tower);
    assert.equal(
      expectedTensors(TINY, { prefix: 'model.', experts: 'fp8' }).length,
      backbone + 8 * 2 * experts + tower,
    );
    assert.equal(expectedTensors(TINY, { prefix: 'model.', experts: 'fused' }).length, backbone + 8 * 2 + tower);
  });

  test('the full geometry has 30720 FP8 experts with as many scales, and about 35e9 parameters', () => {
    const specs = expectedTensors(FULL, { prefix: 'model.', experts: 'fp8' });
    const count = (dtype: string) => specs.filter((spec) => spec.dtype === dtype).length;
    assert.equal(count('F8_E4M3'), 40 * 256 * 3);
    assert.equal(count('F32'), 40 * 256 * 3);
    const parameters = specs
      .filter((spec) => spec.role !== 'expert_scale')
      .reduce((total, spec) => total + spec.shape.reduce((product, size) => product * size, 1), 0);
    const routed = 40 * 256 * 3 * 512 * 2048;
    assert.ok(parameters > routed && parameters < 36e9, `${parameters}`);
    assert.ok(Math.abs(parameters - 35e9) < 0.5e9, `${parameters}`);
  });

  test('spells the contract names and shapes', () => {
    const specs = new Map(expectedTensors(TINY, { prefix: 'model.', experts: 'fp8' }).map((spec) => [spec.name, spec]));
    const shape = (name: string) => specs.get(name)?.shape;
    assert.deepEqual(shape('model.embed_tokens.weight'), [155840, 64]);
    assert.deepEqual(shape('lm_head.weight'), [155840, 64]);
    // 2·Kh·Kd + Vh·Vd = 2·2·16 + 4·16
    assert.deepEqual(shape('model.layers.0.linear_attn.in_proj_qkv.weight'), [128, 64]);
    assert.deepEqual(shape('model.layers.0.linear_attn.conv1d.weight'), [128, 1, 4]);
    assert.deepEqual(shape('model.layers.0.linear_attn.A_log'), [4]);
    assert.deepEqual(shape('model.layers.0.linear_attn.norm.weight'), [16]);
    assert.deepEqual(shape('model.layers.3.self_attn.q_proj.weight'), [4 * 16 * 2, 64]);
    assert.deepEqual(shape('model.layers.3.self_attn.o_proj.weight'), [64, 64]);
    assert.equal(specs.get('model.layers.3.linear_attn.in_proj_qkv.weight'), undefined);
    assert.deepEqual(shape('model.layers.7.mlp.experts.7.down_proj.weight'), [64, 32]);
    assert.equal(specs.get('model.layers.7.mlp.experts.7.down_proj.weight')?.dtype, 'F8_E4M3');
    assert.deepEqual(shape('model.layers.7.mlp.experts.7.down_proj.weight_scale_inv'), [1, 1]);
    assert.deepEqual(shape('model.layers.1.mlp.shared_expert_gate.weight'), [1, 64]);
    assert.deepEqual(shape('codebook_embeddings.weight'), [4096 + 9 * 1024, 64]);
    assert.deepEqual(shape('audio_decoder_mtp_shared.layers.0.hnorm.weight'), [64]);
    assert.deepEqual(shape('audio_decoder_mtp_shared.layers.0.eh_proj.weight'), [64, 128]);
    assert.deepEqual(shape('audio_decoder_mtp.layers.8.head.weight'), [1024, 64]);
    assert.equal(specs.get('audio_decoder_mtp_shared.layers.0.head.weight'), undefined);
    const full = new Map(expectedTensors(FULL, { prefix: 'model.', experts: 'fused' }).map((s) => [s.name, s.shape]));
    assert.deepEqual(full.get('model.layers.0.mlp.experts.gate_up_proj'), [256, 1024, 2048]);
    assert.deepEqual(full.get('model.layers.0.mlp.experts.down_proj'), [256, 2048, 512]);
    assert.deepEqual(full.get('audio_decoder_mtp_shared.layers.0.eh_proj.weight'), [2048, 4096]);
    assert.deepEqual(blockScaleShape(2048, 512), [16, 4]);
    assert.deepEqual(blockScaleShape(130, 1), [2, 1]);
  });

  test('name helpers agree with the map under every prefix', () => {
    for (const prefix of ['model.', 'model.language_model.', 'language_model.model.']) {
      const names = new Set(expectedTensors(TINY, { prefix, experts: 'fp8' }).map((spec) => spec.name));
      const backbone = backboneNames(prefix);
      const layer = backbone.layer(0);
      for (const name of [
        backbone.embedTokens,
        backbone.lmHead,
        layer.linearAttention.inProjQkv,
        layer.linearAttention.dtBias,
        layer.mlp.expert(3).upProjScale,
        backbone.layer(3).selfAttention.kNorm,
        towerNames().codebookLayer(2).head!,
      ]) {
        assert.ok(names.has(name), name);
      }
      assert.equal(detectBackbonePrefix(names), prefix);
      assert.equal(detectExpertFormat(names, prefix), 'fp8');
    }
    const bf16 = expectedTensors(TINY, { prefix: 'model.', experts: 'bf16' }).map((spec) => spec.name);
    assert.equal(detectExpertFormat(bf16, 'model.'), 'bf16');
    const fused = expectedTensors(TINY, { prefix: 'model.', experts: 'fused' }).map((spec) => spec.name);
    assert.equal(detectExpertFormat(fused, 'model.'), 'fused');
  });

  test('refuses a table with no backbone by name', () => {
    assert.throws(
      () => detectBackbonePrefix(['transformer.wte.weight']),
      (error: unknown) => error instanceof DramaError && error.code === 'WEIGHTS_PREFIX_NOT_FOUND',
    );
  });
});

describe('checkWeights', () => {
  const goodTable = () =>
    tableOf(
      expectedTensors(TINY, { prefix: 'model.', experts: 'fp8' }).map((spec) => [
        spec.name,
        { dtype: spec.dtype, shape: spec.shape },
      ]),
    );

  test('passes a complete table and counts it', () => {
    const check = checkWeights(TINY, goodTable());
    assert.equal(check.ok, true);
    assert.deepEqual(check.countsByDtype, { BF16: 331, F8_E4M3: 192, F32: 192 });
    assert.equal(check.experts, 'fp8');
    assert.equal(check.prefix, 'model.');
    assertWeightsMatch(check, 'tiny');
  });

  test('names every missing, mismatched and unused tensor with both values', () => {
    const table = goodTable();
    table.map.set('model.layers.0.linear_attn.out_proj.weight', { dtype: 'BF16', shape: [64, 63] });
    table.map.set('model.norm.weight', { dtype: 'F16', shape: [64] });
    table.map.delete('audio_decoder_mtp.layers.4.out_norm.weight');
    table.map.set('model.layers.0.mlp.extra.weight', { dtype: 'BF16', shape: [1] });
    const check = checkWeights(TINY, table);
    assert.equal(check.ok, false);
    assert.deepEqual(describeFindings(check), [
      'missing audio_decoder_mtp.layers.4.out_norm.weight: expected BF16 [64]',
      'mismatched model.layers.0.linear_attn.out_proj.weight: expected BF16 [64, 64], found BF16 [64, 63]',
      'mismatched model.norm.weight: expected BF16|F32 [64], found F16 [64]',
      'unused model.layers.0.mlp.extra.weight',
    ]);
    assert.throws(
      () => assertWeightsMatch(check, 'tiny'),
      (error: unknown) =>
        error instanceof DramaError && error.code === 'WEIGHTS_MISMATCH' && error.message.includes('[64, 63]'),
    );
  });

  test('flags experts whose storage disagrees with quantization_config', () => {
    const check = checkWeights({ ...TINY, quantization: undefined }, goodTable());
    assert.equal(check.ok, false);
    assert.match(check.problems[0]!, /no quantization_config/);
    const bf16 = tableOf(
      expectedTensors(TINY, { prefix: 'model.', experts: 'bf16' }).map((spec) => [spec.name, spec as TensorInfo]),
    );
    assert.match(checkWeights(TINY, bf16).problems[0]!, /stored as bf16/);
  });
});
