// The CUDA codec's device bytes before it is made (src/codec/cuda/device-bytes.ts), which the lane budget sets aside:
// the weight uploads run against a counting context (host only), and the scratch is the size tables the allocations
// use. On the tiny codec with synthetic weights (the real geometry's figures are in docs/gpu.md): fp16 weights take half the conv bytes of fp32, the f16 decoder's
// scratch holds the split convs' 32 MiB of sums beside the f32 one's, and a call's scratch grows with its frames.
// That the decoder's figures equal what its real upload and scratch allocate is held on a GPU, by
// test/kernels/codec-cuda.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TINY_CODEC_CONFIG } from '../../src/codec/config.ts';
import { decoderScratchWords } from '../../src/codec/cuda/decoder.ts';
import { decoderDeviceBytes, encoderDeviceBytes } from '../../src/codec/cuda/device-bytes.ts';
import { synthesizeCodecWeights } from '../../src/codec/synth-weights.ts';
import { loadCodecWeights } from '../../src/codec/weights.ts';

const config = TINY_CODEC_CONFIG;
const weights = loadCodecWeights(synthesizeCodecWeights(config, 7), config, 'synthetic codec');
const MiB = 2 ** 20;

test('decoder: fp16 weights are smaller than fp32, and the f16 scratch adds the split sums and staged inputs', () => {
  const options = { slots: 64, maxFramesPerCall: 256 };
  const half = decoderDeviceBytes(config, weights, { ...options, precision: 'f16', stageInputs: false });
  const full = decoderDeviceBytes(config, weights, { ...options, precision: 'f32' });
  assert.ok(half.weights < full.weights && half.weights > full.weights / 2, `${half.weights} vs ${full.weights}`);
  assert.equal(half.scratch - full.scratch, 32 * MiB);
  // Staged inputs: fp16 rows of the widest activation (Cin rounded up to 8) and every lane's largest carried rows.
  const staged = decoderDeviceBytes(config, weights, { ...options, precision: 'f16', stageInputs: true });
  const words = decoderScratchWords(config, { ...options, precision: 'f16', stageInputs: true });
  assert.equal(staged.scratch - half.scratch, words.stagedInputs! * 4);
  const widest = Math.max(words.big0!, words.hidden!, words.gateUp!);
  assert.ok(words.stagedInputs! * 2 >= widest + 7 * 256 * config.frameLength, 'room for every conv input in fp16');
  const longer = decoderDeviceBytes(config, weights, { ...options, maxFramesPerCall: 512, precision: 'f32' });
  assert.ok(longer.scratch > 1.9 * (full.scratch - 2 * MiB), 'twice the frames, about twice the scratch');
  console.log(
    `tiny decoder: f16 weights ${(half.weights / MiB).toFixed(1)} MiB, scratch ${(half.scratch / MiB).toFixed(1)} MiB (256 frames a call)`,
  );
});

test('reference encoder: weights and state beside a pass scratch that grows with the pass', () => {
  const short = encoderDeviceBytes(config, weights, { framesPerPass: 256, precision: 'f16' });
  const long = encoderDeviceBytes(config, weights, { framesPerPass: 512, precision: 'f16' });
  assert.equal(short.weights, long.weights);
  assert.ok(long.scratch > 1.99 * short.scratch && long.scratch < 2.01 * short.scratch);
  console.log(
    `tiny reference encoder: f16 weights and state ${(long.weights / MiB).toFixed(1)} MiB, scratch ${(long.scratch / MiB).toFixed(1)} MiB (512 frames a pass)`,
  );
});
