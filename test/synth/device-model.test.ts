// The synthetic model built in device memory, on the cuda backend over a host imitation of the driver (launches are
// recorded, not run): every weight-map tensor the model reads is drawn exactly once, by a fill of its element count
// into its own aligned bytes, the head keeps only the candidates' rows, and the tiny tensors come from synth itself.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CudaBackend } from '../../src/backend/cuda/backend.ts';
import { SMALL_PRESET } from '../../src/model/config.ts';
import { bf16BitsToFloat32, float32ToBf16Bits } from '../../src/numeric/dtypes.ts';
import { buildDeviceModel } from '../../src/synth/device-model.ts';
import { initialValues, residualGains } from '../../src/synth/init.ts';
import { FakeDriver, fakeContext, observeArguments } from '../backend/support/fake-cuda.ts';

const SLOT = 8;

test('every device tensor is one fill of its size into disjoint aligned bytes; host-drawn ones hold synth values', async () => {
  const driver = new FakeDriver();
  const cuda = fakeContext(driver);
  const stop = observeArguments(driver);
  const backend = new CudaBackend(cuda);
  let built: Awaited<ReturnType<typeof buildDeviceModel>>;
  try {
    built = await buildDeviceModel(cuda, backend, SMALL_PRESET, { seed: 5 });
  } finally {
    stop();
  }
  const { model, specs, weights } = built;
  const fills = driver.launches.filter((launch) => launch.name.startsWith('synth_fill_'));
  const ranges = fills.map((launch) => {
    const out = launch.words.getBigUint64(0, true);
    const bf16 = launch.name === 'synth_fill_bf16';
    const count = launch.words.getUint32((bf16 ? 2 : 1) * SLOT, true);
    const bytes = count * (launch.name === 'synth_fill_e4m3' ? 1 : launch.name === 'synth_fill_bf16' ? 2 : 4);
    return { name: launch.name, out, count, bytes, first: bf16 ? launch.words.getUint32(SLOT, true) : 0 };
  });
  const sorted = [...ranges].sort((a, b) => (a.out < b.out ? -1 : 1));
  for (let index = 1; index < sorted.length; index++) {
    const before = sorted[index - 1]!;
    assert.ok(before.out + BigInt(before.bytes) <= sorted[index]!.out, 'fills overlap');
  }
  const experts = specs.filter((spec) => spec.dtype === 'F8_E4M3').length;
  assert.equal(ranges.filter((r) => r.name === 'synth_fill_e4m3').length, experts);
  assert.equal(ranges.filter((r) => r.name === 'synth_fill_block_scales').length, experts);
  for (const r of ranges.filter((range) => range.name === 'synth_fill_e4m3')) assert.equal(r.out % 16n, 0n);
  // The head: the semantic ids' rows in one fill from their first element, then <|im_end|>'s row.
  const { semanticBegin, imEnd } = model.candidates;
  const hidden = model.config.text.hiddenSize;
  const headFills = ranges.filter((r) => r.first === semanticBegin * hidden || r.first === imEnd * hidden);
  assert.deepEqual(
    headFills.map((r) => r.count),
    [model.config.audio.semanticCodebookSize * hidden, hidden],
  );
  assert.deepEqual(model.backbone.candidateHead.shape, [model.candidates.ids.length, hidden]);
  assert.equal(model.backbone.layers.length, SMALL_PRESET.text.layers);
  assert.equal(model.tower.layers.length, SMALL_PRESET.tower.layers);
  // A host-drawn tensor (the first layer's input norm) holds synth's values.
  const norm = specs.find((spec) => spec.name === 'model.layers.0.input_layernorm.weight')!;
  const expected = initialValues(norm, 5, residualGains(model.config).backbone);
  const got = backend.toHost(model.backbone.layers[0]!.inputNorm.data, 0, expected.length);
  for (let i = 0; i < expected.length; i++) {
    assert.equal(got[i], bf16BitsToFloat32(float32ToBf16Bits(expected[i]!)), `norm ${i}`);
  }
  weights.release();
});
