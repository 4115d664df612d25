// Our backbone against transformers' Qwen3.5-MoE (the committed fixture from tools/oracle/qwen35_moe.py): every
// layer's output and the final logits, in fp64 and fp32 modes against transformers' fp32 run, and in bf16-emulating
// mode against transformers' bf16 GPU run; as one prefill, in chunks of 1, 7 and 64 rows, and as prefill + decode.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readFloats, wideRow } from '../../src/backend/cpu/tensors.ts';
import {
  type BackboneRun,
  loadFixtureBackbone,
  medianRowError,
  readReference,
  relativeError,
  runInChunks,
  topOneAgreement,
} from './transformers-fixture.ts';

const FP32_LAYER_BOUND = 1e-5;
// bf16 vs bf16: both sides round at slightly different points, and in this random model an expert routing flip moves a
// row a lot, so rows drift apart layer by layer as far as transformers' own bf16 run drifts from its fp32 run. The
// bounds: the first layer's median row within 2e-2 (bf16 steps are 2^-8), every layer's worst element within 1.0 of
// the largest, and the top-1 equal on at least 90 of 150 rows (transformers bf16 vs its own fp32: 117).
const BF16_FIRST_LAYER_MEDIAN_BOUND = 2e-2;
const BF16_LAYER_BOUND = 1.0;
const BF16_MIN_TOP1_ROWS = 90;

const reference32 = await readReference('fp32');
const rows = reference32.inputIds.length;
const vocab = reference32.logits.length / rows;

function checkAgainstFp32(run: BackboneRun, label: string): void {
  run.hidden.forEach((hidden, layer) => {
    const error = relativeError(hidden, reference32.hidden[layer]!);
    assert.ok(error < FP32_LAYER_BOUND, `${label}: layer ${layer} relative error ${error.toExponential(3)}`);
  });
  const { equal, disagreeing } = topOneAgreement(run.logits, reference32.logits, rows, vocab);
  assert.equal(equal, rows, `${label}: top-1 differs on rows ${JSON.stringify(disagreeing)}`);
}

const cuts: [string, (start: number) => number][] = [
  ['one prefill', () => rows],
  ['chunks of 1', () => 1],
  ['chunks of 7', () => 7],
  ['chunks of 64', () => 64],
  ['prefill 100 + decode', (start) => (start === 0 ? 100 : 1)],
];

for (const precision of ['fp64', 'fp32'] as const) {
  test(`backbone ${precision} matches transformers fp32 layer by layer, in every chunking`, async () => {
    const backbone = await loadFixtureBackbone(precision);
    for (const [label, cut] of cuts)
      checkAgainstFp32(runInChunks(backbone, reference32.inputIds, cut), `${precision} ${label}`);
  });
}

test('backbone with the 64-row chunked delta rule matches transformers fp32', async () => {
  const backbone = await loadFixtureBackbone('fp64', 'chunked');
  checkAgainstFp32(
    runInChunks(backbone, reference32.inputIds, () => rows),
    'chunked one prefill',
  );
  checkAgainstFp32(
    runInChunks(backbone, reference32.inputIds, () => 7),
    'chunked chunks of 7',
  );
});

test('a wrong norm form is caught: the fixture tells (1 + w) from w', async () => {
  const backbone = await loadFixtureBackbone('fp64');
  const { shape } = backbone.finalNorm;
  const shifted = new Float32Array(shape[0]!);
  readFloats(backbone.finalNorm, 0, shifted.length, shifted, 0, wideRow(shifted.length));
  for (let i = 0; i < shifted.length; i++) shifted[i] = shifted[i]! + 1;
  backbone.finalNorm = backbone.backend.fromHost('f32', shape, shifted);
  const run = runInChunks(backbone, reference32.inputIds, () => rows);
  assert.ok(relativeError(run.logits, reference32.logits) > 1e-2);
});

test('backbone bf16 emulation against transformers bf16 on the GPU', async (t) => {
  const reference16 = await readReference('bf16');
  const backbone = await loadFixtureBackbone('bf16');
  const run = runInChunks(backbone, reference16.inputIds, () => rows);
  const errors = run.hidden.map((hidden, layer) => relativeError(hidden, reference16.hidden[layer]!));
  const { equal } = topOneAgreement(run.logits, reference16.logits, rows, vocab);
  const agreementWithFp32 = topOneAgreement(reference16.logits, reference32.logits, rows, vocab).equal;
  const worst = Math.max(...errors);
  const firstLayerMedian = medianRowError(run.hidden[0]!, reference16.hidden[0]!, rows);
  t.diagnostic(
    `bf16 parity: top-1 equal on ${equal}/${rows} rows (transformers bf16 vs its own fp32: ${agreementWithFp32}/${rows}); ` +
      `first layer median row error ${firstLayerMedian.toExponential(3)}; ` +
      `worst layer relative error ${worst.toExponential(3)}; per layer ${errors.map((e) => e.toExponential(2)).join(' ')}`,
  );
  assert.ok(firstLayerMedian < BF16_FIRST_LAYER_MEDIAN_BOUND, `first layer median row error ${firstLayerMedian}`);
  assert.ok(worst < BF16_LAYER_BOUND, `worst bf16 layer relative error ${worst}`);
  assert.ok(equal >= BF16_MIN_TOP1_ROWS, `bf16 top-1 equal on only ${equal}/${rows} rows`);
});
