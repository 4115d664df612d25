// The CUDA codec decoder's launch sequence on the host side, without a GPU (nothing runs; downloads read zeros): in
// f16 every tensor-core conv reads inputs staged once for its layer, inside the decoder's staged scratch, for the
// largest call it takes and for a round of one frame a lane (whose short lanes tile flat); with staging off, none do.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TINY_CODEC_CONFIG } from '../../src/codec/config.ts';
import { CudaCodecDecoder } from '../../src/codec/cuda/decoder.ts';
import { synthesizeCodecWeights } from '../../src/codec/synth-weights.ts';
import { loadCodecWeights } from '../../src/codec/weights.ts';
import type { Frame } from '../../src/model/types.ts';
import { checkStagedConvs, checkUnstagedConvs, codecDevice, observing } from './support/codec-recording.ts';

const config = TINY_CODEC_CONFIG;
const weights = loadCodecWeights(synthesizeCodecWeights(config, 7), config, 'synthetic codec');
const SLOTS = 64;
const MAX_FRAMES = 64;

const frames = (count: number): Frame[] =>
  Array.from({ length: count }, (_, index) => new Int32Array(1 + config.residualCodebooks).fill(index % 7));

/** A decoder on the recording device, and the launches of each call of `calls` (lanes × frames each). */
function decodeCalls(stageInputs: boolean, calls: readonly (readonly [number, number])[]) {
  const { cuda, regions } = codecDevice();
  const options = { slots: SLOTS, maxFramesPerCall: MAX_FRAMES, precision: 'f16' as const, stageInputs };
  // Observing from the start keeps the decoder from recording its small calls as graphs on this device.
  const { result: decoder } = observing(() => CudaCodecDecoder.create(cuda, config, weights, options));
  const launches = calls.map(([lanes, count]) => {
    const slots = Array.from({ length: lanes }, () => decoder.acquire());
    const { observed } = observing(() => decoder.decode(slots.map((slot) => ({ slot, frames: frames(count) }))));
    for (const slot of slots) decoder.release(slot);
    return observed;
  });
  decoder.close();
  return { launches, regions };
}

test('f16: every tensor-core conv reads inputs staged once for its layer, inside the staged scratch', () => {
  const calls = [
    [1, MAX_FRAMES],
    [SLOTS, 1],
    [8, 8],
  ] as const;
  const { launches, regions } = decodeCalls(true, calls);
  const scratch = regions.find((region) => region.label === 'codec decode stagedInputs');
  assert.ok(scratch !== undefined, 'the decoder allocates the staged scratch');
  let flat = 0;
  for (const [call, observed] of launches.entries()) {
    const checked = checkStagedConvs(observed, calls[call]![0] * calls[call]![1], scratch, `call ${call}`);
    assert.ok(checked.convs > 10, `call ${call}: ${checked.convs} tensor-core convs`);
    flat += checked.flat;
  }
  assert.ok(flat > 0, 'a round of one frame a lane tiles some layer flat');
});

test('f16 with staging off: each block stages its own inputs, and no staged scratch is made', () => {
  const { launches, regions } = decodeCalls(false, [[SLOTS, 1]]);
  assert.ok(checkUnstagedConvs(launches[0]!) > 10);
  assert.ok(regions.every((region) => region.label !== 'codec decode stagedInputs'));
});
