import assert from 'node:assert/strict';
import { test } from 'node:test';
import { float32ToTensor, type HostTensor, tensorToFloat32 } from '../../src/checkpoint/tensor.ts';
import { readTorchCheckpoint } from '../../src/checkpoint/torch-pth.ts';
import { Codec } from '../../src/codec/codec.ts';
import { REAL_CODEC_CONFIG, TINY_CODEC_CONFIG } from '../../src/codec/config.ts';
import { synthesizeCodecWeights } from '../../src/codec/synth-weights.ts';
import { codecTensorSpecs, foldWeightNorm, loadCodecWeights } from '../../src/codec/weights.ts';
import { DramaError } from '../../src/errors.ts';
import { FIXTURE_DIR } from './oracle-fixture.ts';

const state = await readTorchCheckpoint(`${FIXTURE_DIR}/codec.pth`);

function refusal(tensors: Map<string, HostTensor>): DramaError {
  try {
    loadCodecWeights(tensors, TINY_CODEC_CONFIG, 'codec.pth');
  } catch (error) {
    assert.ok(error instanceof DramaError);
    assert.equal(error.kind, 'bad_checkpoint');
    return error;
  }
  assert.fail('expected a refusal');
}

test('the PyTorch checkpoint has exactly the declared names (weight norm as weight_g / weight_v)', () => {
  const expected = new Set<string>();
  for (const spec of codecTensorSpecs(TINY_CODEC_CONFIG)) {
    const base = spec.name.slice(0, -'.weight'.length);
    if (spec.weightNorm) {
      expected.add(`${base}.weight_g`);
      expected.add(`${base}.weight_v`);
    } else {
      expected.add(spec.name);
    }
  }
  assert.deepEqual([...state.keys()].sort(), [...expected].sort());
  assert.deepEqual([...synthesizeCodecWeights(TINY_CODEC_CONFIG, 1).keys()].sort(), [...expected].sort());
});

test('missing, mis-shaped and unused tensors are refused by name', () => {
  const missing = new Map(state);
  missing.delete('decoder.model.3.block.1.conv.weight_v');
  const missingError = refusal(missing);
  assert.equal(missingError.code, 'CODEC_TENSOR_MISSING');
  assert.match(missingError.message, /decoder\.model\.3\.block\.1\.conv\.weight_v/);

  const misshaped = new Map(state);
  misshaped.set('quantizer.post_module.norm.weight', float32ToTensor(new Float32Array(32), 'F32', [32]));
  const shapeError = refusal(misshaped);
  assert.equal(shapeError.code, 'CODEC_TENSOR_SHAPE');
  assert.match(shapeError.message, /quantizer\.post_module\.norm\.weight.*\[32\].*\[64\]/);

  const extra = new Map(state);
  extra.set('quantizer.post_module.layers.9.attention.wo.weight', float32ToTensor(new Float32Array(4), 'F32', [2, 2]));
  const unusedError = refusal(extra);
  assert.equal(unusedError.code, 'CODEC_TENSOR_UNUSED');
  assert.equal(unusedError.param, 'quantizer.post_module.layers.9.attention.wo.weight');
});

test('weight norm folds the same from weight_g/weight_v, the parametrization form, and a generator prefix', () => {
  const base = 'decoder.model.0.conv';
  const folded = loadCodecWeights(state, TINY_CODEC_CONFIG, 'a').get(`${base}.weight`)!;
  const parametrized = new Map<string, HostTensor>();
  const prefixed = new Map<string, HostTensor>();
  for (const [name, tensor] of state) {
    parametrized.set(
      name
        .replace('.weight_g', '.parametrizations.weight.original0')
        .replace('.weight_v', '.parametrizations.weight.original1'),
      tensor,
    );
    prefixed.set(`generator.${name}`, tensor);
  }
  prefixed.set('discriminator.anything', float32ToTensor(new Float32Array(1), 'F32', [1]));
  assert.deepEqual(loadCodecWeights(parametrized, TINY_CODEC_CONFIG, 'b').get(`${base}.weight`), folded);
  assert.deepEqual(loadCodecWeights(prefixed, TINY_CODEC_CONFIG, 'c').get(`${base}.weight`), folded);
  // Independent check of the fold for one output row: w = g · v / ‖v‖.
  const g = tensorToFloat32(state.get(`${base}.weight_g`)!);
  const v = tensorToFloat32(state.get(`${base}.weight_v`)!);
  const rowSize = v.length / g.length;
  const norm = Math.hypot(...v.subarray(rowSize, 2 * rowSize));
  assert.ok(
    Math.abs(folded[rowSize + 3]! - (g[1]! * v[rowSize + 3]!) / norm) < 1e-6 * Math.abs(folded[rowSize + 3]!) + 1e-9,
  );
  assert.notDeepEqual(folded.subarray(0, rowSize), v.subarray(0, rowSize));
});

test('foldWeightNorm scales each row of v to norm g', () => {
  const folded = foldWeightNorm(Float32Array.of(2, 5), Float32Array.of(3, 4, 0, 1), 2);
  assert.deepEqual([...folded], [1.2000000476837158, 1.600000023841858, 0, 5]);
});

test('synthetic weights are deterministic for a seed and differ across seeds', () => {
  const first = synthesizeCodecWeights(TINY_CODEC_CONFIG, 11);
  const again = synthesizeCodecWeights(TINY_CODEC_CONFIG, 11);
  const other = synthesizeCodecWeights(TINY_CODEC_CONFIG, 12);
  const name = 'quantizer.quantizer.quantizers.4.codebook.weight';
  assert.deepEqual(first.get(name)!.data, again.get(name)!.data);
  assert.notDeepEqual(first.get(name)!.data, other.get(name)!.data);
});

test('synthetic weights decode to finite audio in [-1, 1] that is not silent', () => {
  const codec = Codec.fromWeights(TINY_CODEC_CONFIG, synthesizeCodecWeights(TINY_CODEC_CONFIG, 5));
  const frames = Array.from({ length: 8 }, (_, index) =>
    Int32Array.from({ length: 10 }, (_, codebook) => index * 50 + codebook),
  );
  const pcm = codec.decode(frames);
  let sumOfSquares = 0;
  for (const sample of pcm) {
    assert.ok(Number.isFinite(sample) && Math.abs(sample) <= 1, `sample ${sample}`);
    sumOfSquares += sample * sample;
  }
  const rms = Math.sqrt(sumOfSquares / pcm.length);
  assert.ok(rms > 0.01 && rms < 0.9, `rms ${rms}`);
});

test('the real codec declares the Fish modified-DAC names and shapes', () => {
  const shapes = new Map(codecTensorSpecs(REAL_CODEC_CONFIG).map((spec) => [spec.name, spec.shape]));
  const expected: [string, number[]][] = [
    ['encoder.block.0.conv.weight', [64, 1, 7]],
    ['encoder.block.1.block.0.block.1.conv.weight', [64, 64, 7]],
    ['encoder.block.4.block.4.conv.weight', [1024, 512, 16]],
    ['encoder.block.4.block.5.layers.3.attention.wqkv.weight', [3072, 1024]],
    ['encoder.block.6.conv.weight', [1024, 1024, 3]],
    ['quantizer.semantic_quantizer.quantizers.0.codebook.weight', [4096, 8]],
    ['quantizer.quantizer.quantizers.8.in_proj.weight', [8, 1024, 1]],
    ['quantizer.downsample.1.1.pwconv1.weight', [4096, 1024]],
    ['quantizer.upsample.0.0.conv.weight', [1024, 1024, 2]],
    ['quantizer.post_module.layers.7.feed_forward.w2.weight', [1024, 3072]],
    ['decoder.model.0.conv.weight', [1536, 1024, 7]],
    ['decoder.model.1.block.1.conv.weight', [1536, 768, 16]],
    ['decoder.model.4.block.4.block.1.conv.weight', [96, 96, 7]],
    ['decoder.model.6.conv.weight', [1, 96, 7]],
  ];
  for (const [name, shape] of expected) assert.deepEqual(shapes.get(name), shape, name);
  const parameters = [...shapes.values()].reduce((total, shape) => total + shape.reduce((a, b) => a * b, 1), 0);
  assert.ok(parameters > 3.8e8 && parameters < 4e8, `${parameters} parameters`);
});

/** A post-module RoPE buffer [positions, pairs, 2] from `cosSin(position, pair)`. */
function ropeBuffer(positions: number, cosSin: (position: number, pair: number) => [number, number]): HostTensor {
  const pairs = TINY_CODEC_CONFIG.postModule.headDim / 2;
  const values = new Float32Array(positions * pairs * 2);
  for (let position = 0; position < positions; position++) {
    for (let pair = 0; pair < pairs; pair++) {
      const [cosine, sine] = cosSin(position, pair);
      values[(position * pairs + pair) * 2] = cosine;
      values[(position * pairs + pair) * 2 + 1] = sine;
    }
  }
  return float32ToTensor(values, 'F32', [positions, pairs, 2]);
}

test("a checkpoint's RoPE table (freqs_cis) is used for the positions it covers", () => {
  const { headDim, ropeBase } = TINY_CODEC_CONFIG.postModule;
  const exact = (position: number, pair: number): [number, number] => {
    const angle = position / ropeBase ** ((2 * pair) / headDim);
    return [Math.cos(angle), Math.sin(angle)];
  };
  const frames = Array.from({ length: 12 }, (_, index) => Int32Array.from({ length: 10 }, (_, k) => index * 31 + k));
  const plain = Codec.fromWeights(TINY_CODEC_CONFIG, state).decode(frames);
  const withTable = (table: HostTensor) =>
    Codec.fromWeights(TINY_CODEC_CONFIG, new Map([...state, ['quantizer.post_module.freqs_cis', table]])).decode(
      frames,
    );
  // The same values as computed: the same samples, bit for bit (table covers 8 of the 12 positions).
  assert.deepEqual(withTable(ropeBuffer(8, exact)), plain);
  // bf16-rounded values (as the Fish module stores them): used, so the samples move, but only slightly.
  const bf16 = (value: number) => tensorToFloat32(float32ToTensor(Float32Array.of(value), 'BF16', [1]))[0]!;
  const rounded = withTable(ropeBuffer(8, (position, pair) => exact(position, pair).map(bf16) as [number, number]));
  let largest = 0;
  for (let index = 0; index < plain.length; index++)
    largest = Math.max(largest, Math.abs(rounded[index]! - plain[index]!));
  assert.ok(largest > 0 && largest < 0.05, `largest change ${largest}`);
  const wrong = new Map(state);
  wrong.set('quantizer.post_module.freqs_cis', float32ToTensor(new Float32Array(8 * 8 * 2), 'F32', [8, 8, 2]));
  assert.equal(refusal(wrong).code, 'CODEC_TENSOR_SHAPE');
});
