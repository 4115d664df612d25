// The device fills' CPU reference (src/synth/device-init.ts, what kernels/cuda/synth_init.cu computes per element)
// against synth's own tensors: a model drawn on the device holds the bytes `synth` writes for the same seed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tensorElements } from '../../src/checkpoint/tensor.ts';
import { TINY_PRESET } from '../../src/model/config.ts';
import type { TensorSpec } from '../../src/model/weights.ts';
import { deviceFill, referenceBf16, referenceBlockScale, referenceE4m3 } from '../../src/synth/device-init.ts';
import { syntheticDeviceConfig, syntheticDeviceSpecs } from '../../src/synth/device-model.ts';
import { residualGains, uniformCodeTable } from '../../src/synth/init.ts';
import type { SynthPlan } from '../../src/synth/plan.ts';
import { synthesizeTensors } from '../../src/synth/synthesize.ts';

const SEED = 20261201;
/** Elements compared per tensor: all of small ones, an evenly spread sample (ends included) of large ones. */
const SAMPLE = 2048;

function sampleIndices(count: number): number[] {
  if (count <= SAMPLE) return Array.from({ length: count }, (_, index) => index);
  return Array.from({ length: SAMPLE }, (_, k) => Math.round((k * (count - 1)) / (SAMPLE - 1)));
}

test('the device fills reproduce synth for every tensor of the tiny model (FP8 experts)', () => {
  const { config } = syntheticDeviceConfig(TINY_PRESET);
  const specs = syntheticDeviceSpecs(config);
  const plan = { config, specs } as unknown as SynthPlan;
  const gains = residualGains(config);
  const byName = new Map<string, TensorSpec>(specs.map((spec) => [spec.name, spec]));
  const table = uniformCodeTable();
  const kinds = { host: 0, bf16: 0, e4m3: 0, scales: 0 };
  let previousE4m3: TensorSpec | undefined;
  for (const [name, tensor] of synthesizeTensors(plan, SEED)) {
    const spec = byName.get(name)!;
    const elements = tensorElements(tensor);
    if (spec.role === 'expert_scale') {
      const fill = deviceFill(previousE4m3!, SEED, gains[previousE4m3!.part]);
      assert.equal(fill.kind, 'e4m3');
      if (fill.kind !== 'e4m3') continue;
      for (const index of sampleIndices(elements.length)) {
        assert.equal(referenceBlockScale(fill.scales, index), elements[index], `${name}[${index}]`);
      }
      kinds.scales += 1;
      continue;
    }
    const fill = deviceFill(spec, SEED, gains[spec.part]);
    kinds[fill.kind] += 1;
    if (fill.kind === 'host') continue;
    for (const index of sampleIndices(elements.length)) {
      const expected = elements[index];
      if (fill.kind === 'bf16') assert.equal(referenceBf16(fill, index), expected, `${name}[${index}]`);
      else assert.equal(referenceE4m3(fill.weight, index, table), expected, `${name}[${index}]`);
    }
    if (fill.kind === 'e4m3') previousE4m3 = spec;
  }
  // Every path was exercised: host-drawn norms and decays, bf16 projections and tables, FP8 experts and scales.
  assert.ok(kinds.host > 0 && kinds.bf16 > 0 && kinds.e4m3 > 0 && kinds.scales === kinds.e4m3, JSON.stringify(kinds));
});

test('the host draws only tiny tensors and the decays: every large tensor is drawn on the device', () => {
  const { config } = syntheticDeviceConfig(TINY_PRESET);
  const gains = residualGains(config);
  for (const spec of syntheticDeviceSpecs(config)) {
    if (spec.role === 'expert_scale') continue;
    const count = spec.shape.reduce((product, size) => product * size, 1);
    const fill = deviceFill(spec, SEED, gains[spec.part]);
    if (count > 4096 && spec.role !== 'decay_log') assert.notEqual(fill.kind, 'host', spec.name);
  }
});
